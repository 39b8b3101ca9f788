import { isObject } from '../metering/usage'
import { rootOf, startedBy } from './parent-sessions'
import { type AgentSignature, type ClientRequest, header, sessionId, workingDirectoryIn } from './types'

/**
 * Claude Code (and the Claude Agent SDK built on it) sends `User-Agent: claude-cli/<version>
 * (external, cli|sdk-ts|...)` and `x-app: cli`. Its session id is inside the Messages
 * request's `metadata.user_id`: up to v2.1.77 a string
 * `user_<hash>_account_<uuid>_session_<uuid>`, from v2.1.78 a JSON string
 * `{"device_id":"...","account_uuid":"...","session_id":"..."}`. Version 2.1 also sends it as
 * `X-Claude-Code-Session-Id` on every request: the one place it is in a call without
 * `metadata` (token counting, which Claude Code does at start-up and for /context). A session
 * another one started (a teammate of an agent team, which its lead starts with
 * `--parent-session-id <its own id>`, and which has a session id of its own) adds
 * `parent_session_id` to the JSON (2.1.332): its calls are that session's, as a Codex sub-agent's
 * are its session's, and count in its `session_limit_usd`.
 */
export const claudeCode: AgentSignature = {
  name: 'claude-code',
  matches: (r) => /^claude-(cli|code)\//i.test(r.ua),
  session: (r) => claudeCodeSession(r),
  // It states the folder it runs in: `Working directory: /path` in its system prompt's <env> block
  // before 2.1; since, `- Primary working directory: /path` in an "# Environment" section, which
  // 2.1.332 sends as a message of role `system` after the user's first.
  project: (r) => {
    if (!isObject(r.body)) return ''
    const p = workingDirectoryIn(r.body.system)
    if (p) return p
    const messages = r.body.messages
    if (!Array.isArray(messages)) return ''
    let seen = 0
    for (const m of messages) {
      if (!isObject(m) || m.role !== 'system') continue
      const found = workingDirectoryIn(m.content)
      if (found || ++seen >= 4) return found
    }
    return ''
  },
}

/**
 * Its session, or the session that started it; a call naming only its own (a teammate's token
 * counting, `X-Claude-Code-Session-Id` alone) goes where its messages said it belongs.
 */
function claudeCodeSession(r: ClientRequest): string {
  const uid = claudeUserId(r.body)
  const own = sessionId(uid.session) || sessionId(header(r.headers, 'x-claude-code-session-id'))
  const parent = sessionId(uid.parent)
  if (parent) return startedBy('claude-code', own, parent)
  return own && rootOf('claude-code', own)
}

/**
 * The parts of a Claude Code request's `metadata.user_id`: its session (and the session that
 * started it, `parent`, where one did), and the Claude account
 * it is logged in with (`account_uuid`; '' with an API key, or with a token given alone in
 * `CLAUDE_CODE_OAUTH_TOKEN`). The account outlives the login's access tokens, which Claude Code
 * refreshes every few hours. Unvalidated: callers check what they use.
 */
export function claudeUserId(body: unknown): { session: unknown; parent: unknown; account: unknown } {
  const none = { session: '', parent: '', account: '' }
  if (!isObject(body) || !isObject(body.metadata)) return none
  const uid: unknown = body.metadata.user_id
  const of = (o: Record<string, unknown>) => ({ session: o.session_id, parent: o.parent_session_id, account: o.account_uuid })
  if (isObject(uid)) return of(uid)
  if (typeof uid !== 'string') return none
  if (uid.startsWith('{')) {
    try {
      const parsed = JSON.parse(uid)
      return isObject(parsed) ? of(parsed) : none
    } catch {
      return none
    }
  }
  const m = /_account_([0-9a-f-]*)_session_([0-9a-f-]{8,})$/i.exec(uid)
  if (m) return { session: m[2], parent: '', account: m[1] }
  const s = /_session_([0-9a-f-]{8,})$/i.exec(uid)
  return s ? { session: s[1], parent: '', account: '' } : none
}
