import type { IncomingHttpHeaders } from 'node:http'
import { isObject } from '../metering/usage'

export interface AgentIdentity {
  agent: string
  session: string
}

function header(headers: IncomingHttpHeaders, name: string): string {
  const v = headers[name]
  return typeof v === 'string' ? v.trim() : Array.isArray(v) ? (v[0] ?? '').trim() : ''
}

/**
 * Which agent sent a call and in which of its sessions. `X-Burnrate-Agent` and
 * `X-Burnrate-Session` win; otherwise the client is recognised from what it already sends.
 */
export function detectAgent(headers: IncomingHttpHeaders, body: unknown): AgentIdentity {
  let agent = header(headers, 'x-burnrate-agent')
  let session = header(headers, 'x-burnrate-session')
  const ua = header(headers, 'user-agent')
  if (!agent) {
    if (/^claude-cli\//i.test(ua) || /claude-code/i.test(ua)) agent = 'claude-code'
    else if (/^codex_cli_rs\//i.test(ua) || /codex/i.test(ua)) agent = 'codex'
  }
  if (!session && isObject(body) && isObject(body.metadata) && typeof body.metadata.user_id === 'string') {
    // Claude Code: metadata.user_id = "user_<hash>_account_<uuid>_session_<uuid>"
    const m = /session_([0-9a-f-]{8,})/i.exec(body.metadata.user_id)
    if (m) session = m[1]
  }
  return { agent, session }
}
