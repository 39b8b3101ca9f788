import type { IncomingHttpHeaders } from 'node:http'
import { AGENTS } from './known'
import { type ClientRequest, header, labelHeader, projectPath, sessionId } from './types'

export interface AgentIdentity {
  agent: string
  session: string
  /** `X-Burnrate-Project`, else the working directory the client states, else ''. */
  project: string
  /**
   * The client recognised from what it sends (./known.ts), whatever `X-Burnrate-Agent` names
   * it: what it is answered as (a refusal in the form Codex stops on), '' when none.
   */
  client: string
}

/** Session headers any client may send (used when its own signature names none). */
const GENERIC_SESSION_HEADERS = ['x-session-id', 'session_id', 'x-session-affinity'] as const

/**
 * Which agent sent a call and in which of its sessions. `X-Burnrate-Agent` and
 * `X-Burnrate-Session` win; otherwise the client is recognised from what it already sends
 * (see ./known.ts), and its own session or conversation id is taken where it sends one.
 */
export function detectAgent(headers: IncomingHttpHeaders, body: unknown): AgentIdentity {
  const req: ClientRequest = { headers, ua: header(headers, 'user-agent'), body }
  let agent = labelHeader(headers, 'x-burnrate-agent')
  let session = labelHeader(headers, 'x-burnrate-session')
  const known = AGENTS.find((a) => a.matches(req))
  if (!agent && known) agent = known.name
  if (!session) session = known?.session?.(req) ?? ''
  if (!session) {
    for (const h of GENERIC_SESSION_HEADERS) {
      session = sessionId(header(headers, h))
      if (session) break
    }
  }
  const project = projectPath(labelHeader(headers, 'x-burnrate-project')) || (known?.project?.(req) ?? '')
  return { agent, session, project, client: known?.name ?? '' }
}
