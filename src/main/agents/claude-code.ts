import { isObject } from '../metering/usage'
import { type AgentSignature, type ClientRequest, lineAfter, projectPath, sessionId } from './types'

/**
 * Claude Code (and the Claude Agent SDK built on it) sends `User-Agent: claude-cli/<version>
 * (external, cli|sdk-ts|...)` and `x-app: cli`. Its session id is inside the Messages
 * request's `metadata.user_id`: up to v2.1.77 a string
 * `user_<hash>_account_<uuid>_session_<uuid>`, from v2.1.78 a JSON string
 * `{"device_id":"...","account_uuid":"...","session_id":"..."}`.
 */
export const claudeCode: AgentSignature = {
  name: 'claude-code',
  matches: (r) => /^claude-(cli|code)\//i.test(r.ua),
  session: (r) => claudeCodeSession(r),
  // Its system prompt's <env> block states `Working directory: /path`.
  project: (r) => {
    const sys = isObject(r.body) ? r.body.system : undefined
    const blocks = typeof sys === 'string' ? [sys] : Array.isArray(sys) ? sys.slice(0, 8).map((b) => (isObject(b) ? b.text : '')) : []
    for (const t of blocks) {
      const p = typeof t === 'string' ? projectPath(lineAfter(t, 'Working directory: ')) : ''
      if (p) return p
    }
    return ''
  },
}

function claudeCodeSession(r: ClientRequest): string {
  return sessionId(claudeUserId(r.body).session)
}

/**
 * The parts of a Claude Code request's `metadata.user_id`: its session, and the Claude account
 * it is logged in with (`account_uuid`; '' with an API key, or with a token given alone in
 * `CLAUDE_CODE_OAUTH_TOKEN`). The account outlives the login's access tokens, which Claude Code
 * refreshes every few hours. Unvalidated: callers check what they use.
 */
export function claudeUserId(body: unknown): { session: unknown; account: unknown } {
  const none = { session: '', account: '' }
  if (!isObject(body) || !isObject(body.metadata)) return none
  const uid: unknown = body.metadata.user_id
  if (isObject(uid)) return { session: uid.session_id, account: uid.account_uuid }
  if (typeof uid !== 'string') return none
  if (uid.startsWith('{')) {
    try {
      const parsed = JSON.parse(uid)
      return isObject(parsed) ? { session: parsed.session_id, account: parsed.account_uuid } : none
    } catch {
      return none
    }
  }
  const m = /_account_([0-9a-f-]*)_session_([0-9a-f-]{8,})$/i.exec(uid)
  if (m) return { session: m[2], account: m[1] }
  const s = /_session_([0-9a-f-]{8,})$/i.exec(uid)
  return s ? { session: s[1], account: '' } : none
}
