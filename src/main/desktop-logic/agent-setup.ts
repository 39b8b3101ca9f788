import { noProxyLines } from '../../shared/no-proxy'

/**
 * The environment lines that point agents at the proxy, for "Copy agent setup": the OpenAI and
 * Anthropic SDKs (and the agents built on them: Claude Code, Aider, ...) and Gemini CLI (with an
 * API key, and logged in with Google: Gemini Code Assist) read these, and Claude Code and Gemini CLI
 * on Vertex AI the last two. Codex CLI 0.171 ignores
 * OPENAI_BASE_URL: its setup is a config.toml line (README, Connect panel). The last line keeps
 * the address out of a corporate proxy (HTTPS_PROXY in the shell would otherwise take the agents'
 * calls for it: the app cannot see the shell's variables to tell); without a proxy it changes
 * nothing. PowerShell syntax on Windows, POSIX shell elsewhere.
 */
export function agentSetup(serverUrl: string, platform: NodeJS.Platform): string {
  const base = serverUrl.replace(/\/+$/, '')
  const vars: [string, string][] = [
    ['OPENAI_BASE_URL', `${base}/openai/v1`],
    ['ANTHROPIC_BASE_URL', `${base}/anthropic`],
    ['GOOGLE_GEMINI_BASE_URL', `${base}/gemini`],
    ['CODE_ASSIST_ENDPOINT', `${base}/code-assist`],
    // Read only on Vertex AI (CLAUDE_CODE_USE_VERTEX, GOOGLE_GENAI_USE_VERTEXAI): Claude Code and Gemini CLI.
    ['ANTHROPIC_VERTEX_BASE_URL', `${base}/vertex/v1`],
    ['GOOGLE_VERTEX_BASE_URL', `${base}/vertex`],
  ]
  if (platform === 'win32') {
    return [`# Burnrate: meter AI agents through ${base} (PowerShell)`, ...vars.map(([k, v]) => `$env:${k} = "${v}"`), noProxyLines(base, platform)].join('\r\n') + '\r\n'
  }
  return [`# Burnrate: meter AI agents through ${base}`, ...vars.map(([k, v]) => `export ${k}=${v}`), noProxyLines(base, platform)].join('\n') + '\n'
}
