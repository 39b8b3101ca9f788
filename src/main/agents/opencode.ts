import { isObject } from '../metering/usage'
import { rootOf, startedBy } from './parent-sessions'
import { type AgentSignature, header, sessionId, workingDirectoryIn } from './types'

/**
 * opencode (sst/opencode): `User-Agent: opencode/<version>` and its session id (`ses_...`) in
 * `x-session-affinity` (newer releases also `X-Session-Id`), or, for its own opencode
 * provider, `x-opencode-session` (packages/opencode/src/session/llm.ts). A sub-agent (the task
 * tool's) runs in a session of its own and sends its parent's as `x-parent-session-id`: its
 * calls are the parent's, as a Codex sub-agent's are its session's, and count in its
 * `session_limit_usd`; a sub-agent's sub-agent names the sub-agent, and its calls are the root
 * session's too (./parent-sessions.ts).
 */
export const opencode: AgentSignature = {
  name: 'opencode',
  matches: (r) => /^opencode\//i.test(r.ua) || header(r.headers, 'x-opencode-session') !== '',
  session: (r) => {
    const own = sessionId(header(r.headers, 'x-opencode-session')) || sessionId(header(r.headers, 'x-session-affinity')) || sessionId(header(r.headers, 'x-session-id'))
    const parent = sessionId(header(r.headers, 'x-parent-session-id'))
    // The task tool's parent is the session that called it, a sub-agent's own when its agent may
    // start sub-agents (`permission: { task: allow }`): the root is the one a parent's calls are under.
    if (parent) return startedBy('opencode', own, parent)
    return own && rootOf('opencode', own)
  },
  // Its system prompt states `  Working directory: /path` in an <env> block (1.18). Only the system
  // text is read, wherever the provider's wire format puts it: Anthropic's `system`, the Responses
  // API's `instructions`, Gemini's `systemInstruction`, or leading system messages (OpenAI chat,
  // the Responses API's `input`).
  project: (r) => {
    const b = r.body
    if (!isObject(b)) return ''
    return (
      workingDirectoryIn(b.system) ||
      workingDirectoryIn(b.instructions) ||
      (isObject(b.systemInstruction) ? workingDirectoryIn(b.systemInstruction.parts) : '') ||
      inSystemMessages(b.messages) ||
      inSystemMessages(b.input)
    )
  },
}

/** The working directory stated in the system (or developer) messages among the first 4 of `list`. */
function inSystemMessages(list: unknown): string {
  if (!Array.isArray(list)) return ''
  for (const m of list.slice(0, 4)) {
    if (!isObject(m) || (m.role !== 'system' && m.role !== 'developer')) continue
    const p = workingDirectoryIn(m.content)
    if (p) return p
  }
  return ''
}
