import { type AgentSignature, firstSystemText, lineAfter, projectPath } from './types'

/**
 * Cline: its VS Code extension (and its own Cline provider) sends `User-Agent: Cline/<version>`;
 * its CLI (3.0, npm `cline`) sends to any other provider the User-Agent of the AI SDK it is built
 * on (`ai-sdk/openai-compatible/… runtime/bun/…`), which builds before this one did not
 * recognise: its calls had no agent. Its system prompt opens "You are Cline". It sends no session
 * id to such a provider, so its sessions are inferred.
 */
export const cline: AgentSignature = {
  name: 'cline',
  matches: (r) => /^Cline\//.test(r.ua) || /^You are Cline\b/.test(firstSystemText(r)),
  // Its system prompt's <env> block: "4. Working Directory: /path" (CLI 3.0).
  project: (r) => projectPath(lineAfter(firstSystemText(r), 'Working Directory: ')),
}
