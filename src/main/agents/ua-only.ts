import type { AgentSignature } from './types'

/**
 * Further agents recognised by the User-Agent they set, with no session id of their own:
 * Continue (`Continue/<version> (<ide>; <type>)`, its CLI `Continue-CLI/<version>`;
 * continuedev/continue#8532), Cline (`Cline/<version>`), Qwen Code (`QwenCode/<version>
 * (<platform>; <arch>)`) and GitHub Copilot Chat (`GitHubCopilotChat/<version>`).
 */
function byUserAgent(name: string, re: RegExp): AgentSignature {
  return { name, matches: (r) => re.test(r.ua) }
}

export const continueDev = byUserAgent('continue', /^Continue(-CLI)?\//)
export const cline = byUserAgent('cline', /^Cline\//)
export const qwenCode = byUserAgent('qwen-code', /^QwenCode\//)
export const copilot = byUserAgent('github-copilot', /^GitHubCopilotChat\//)
