import { type AgentSignature, sessionId } from './types'

/**
 * Gemini CLI: `User-Agent: GeminiCLI/<version>/<model> (<platform>; <arch>; <surface>)` (older
 * releases `GeminiCLI/<version> (<platform>; <arch>)`; with a client name `GeminiCLI-<name>/…`,
 * e.g. `GeminiCLI-tui`), set on the client it uses. In a VS Code terminal (TERM_PROGRAM=vscode),
 * or as VS Code's ACP client, it sends Cloud Code's instead: `CloudCodeVSCode/<version>
 * (aidev_client; …; proxy_client=geminicli)` (0.61 createContentGenerator); that UA without
 * `proxy_client=geminicli` is Google's own VS Code extension, not Gemini CLI. With an API key it
 * sends no session id (`x-gemini-api-privileged-user-id` is a per-install id, not a session), so
 * its sessions are inferred. Logged in with Google, its Code Assist model calls carry its own
 * session id as `request.session_id` (../providers/code-assist.ts).
 */
export const geminiCli: AgentSignature = {
  name: 'gemini-cli',
  matches: (r) => /^GeminiCLI\b/i.test(r.ua) || (/^CloudCodeVSCode\//i.test(r.ua) && r.ua.includes('proxy_client=geminicli')),
  session: (r) => sessionId((r.body as { request?: { session_id?: unknown } } | undefined)?.request?.session_id),
}
