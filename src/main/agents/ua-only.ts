import type { AgentSignature } from './types'

/**
 * Further agents recognised by the User-Agent they set, with no session id of their own:
 * Continue (`Continue/<version> (<ide>; <type>)`, its CLI `Continue-CLI/<version>`;
 * continuedev/continue#8532) and GitHub Copilot Chat (`GitHubCopilotChat/<version>`). Cline and
 * Qwen Code are in files of their own (./cline.ts, ./qwen-code.ts).
 */
function byUserAgent(name: string, re: RegExp): AgentSignature {
  return { name, matches: (r) => re.test(r.ua) }
}

export const continueDev = byUserAgent('continue', /^Continue(-CLI)?\//)
export const copilot = byUserAgent('github-copilot', /^GitHubCopilotChat\//)
