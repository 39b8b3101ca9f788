import { type AgentSignature, sessionId } from './types'

/**
 * Gemini CLI: `User-Agent: GeminiCLI/<version>/<model> (<platform>; <arch>)` (older releases
 * `GeminiCLI/<version> (<platform>; <arch>)`; logged in with Google `GeminiCLI-tui/…`), set on the
 * client it uses. With an API key it sends no session id (`x-gemini-api-privileged-user-id` is a
 * per-install id, not a session), so its sessions are inferred. Logged in with Google, its Code
 * Assist model calls carry its own session id as `request.session_id` (../providers/code-assist.ts).
 */
export const geminiCli: AgentSignature = {
  name: 'gemini-cli',
  matches: (r) => /^GeminiCLI\b/i.test(r.ua),
  session: (r) => sessionId((r.body as { request?: { session_id?: unknown } } | undefined)?.request?.session_id),
}
