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
  const b = r.body
  if (!isObject(b) || !isObject(b.metadata)) return ''
  const uid: unknown = b.metadata.user_id
  if (isObject(uid)) return sessionId(uid.session_id)
  if (typeof uid !== 'string') return ''
  if (uid.startsWith('{')) {
    try {
      const parsed = JSON.parse(uid)
      return isObject(parsed) ? sessionId(parsed.session_id) : ''
    } catch {
      return ''
    }
  }
  const m = /_session_([0-9a-f-]{8,})$/i.exec(uid)
  return m ? sessionId(m[1]) : ''
}
