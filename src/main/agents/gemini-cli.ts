import type { AgentSignature } from './types'

/**
 * Gemini CLI: `User-Agent: GeminiCLI/<version>/<model> (<platform>; <arch>)` (older releases
 * `GeminiCLI/<version> (<platform>; <arch>)`), set on the @google/genai client it uses. With an
 * API key it sends no session id (`x-gemini-api-privileged-user-id` is a per-install id, not a
 * session), so its sessions are inferred.
 */
export const geminiCli: AgentSignature = {
  name: 'gemini-cli',
  matches: (r) => /^GeminiCLI\b/i.test(r.ua),
}
