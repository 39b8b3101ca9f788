import { type AgentSignature, header, sessionId } from './types'

/**
 * opencode (sst/opencode): `User-Agent: opencode/<version>` and its session id (`ses_...`) in
 * `x-session-affinity` (newer releases also `X-Session-Id`), or, for its own opencode
 * provider, `x-opencode-session` (packages/opencode/src/session/llm.ts).
 */
export const opencode: AgentSignature = {
  name: 'opencode',
  matches: (r) => /^opencode\//i.test(r.ua) || header(r.headers, 'x-opencode-session') !== '',
  session: (r) =>
    sessionId(header(r.headers, 'x-opencode-session')) ||
    sessionId(header(r.headers, 'x-session-affinity')) ||
    sessionId(header(r.headers, 'x-session-id')),
}
