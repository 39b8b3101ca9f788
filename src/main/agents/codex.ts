import { isObject } from '../metering/usage'
import { type AgentSignature, type ClientRequest, header, projectPath, sessionId } from './types'

/** `codex_cli_rs`, `codex_exec`, `codex-tui`, `codex_vscode`, …, and `Codex Desktop` (a first-party `Codex ` name). */
const CODEX = /^(?:codex[_-]|Codex )/i

/**
 * OpenAI Codex (codex-rs): `User-Agent: codex_cli_rs/<version> (<os>; <arch>) <terminal>` and
 * `originator: codex_cli_rs` (`codex_exec` for `codex exec`, `codex-tui`, `codex_vscode` for the IDE
 * extension; the desktop app, which runs `codex app-server` with the same config, `Codex Desktop`:
 * codex-rs takes any originator starting `Codex ` as its own, and the User-Agent starts with it).
 * A program embedding Codex names itself instead (`CODEX_INTERNAL_ORIGINATOR_OVERRIDE`, or its
 * `clientInfo.name` to `codex app-server`): `zed_codex/0.171.0 (…) xterm (codex_exec; 0.171.0)`,
 * so Codex is also known by the `x-codex-*` headers 0.171 sends with every request
 * (`x-codex-window-id`, `x-codex-beta-features`, `x-codex-turn-metadata`), which no other client sends.
 * Each request (and the WebSocket upgrade) carries the session id: Codex 0.169 sends
 * `session-id` and `thread-id` (the same id for the session's own thread, which `codex exec
 * resume <id>` keeps; a sub-agent's thread, spawned or a review, sends its own `thread-id` with
 * the session's `session-id` and `x-codex-parent-thread-id`, so `session-id` is read first: a
 * sub-agent's calls are its session's, and count in its `session_limit_usd`), older releases a
 * `session_id` header (and `conversation_id`); the Responses body repeats it as `prompt_cache_key`.
 */
export const codex: AgentSignature = {
  name: 'codex',
  matches: (r) => CODEX.test(r.ua) || CODEX.test(header(r.headers, 'originator')) || hasCodexHeader(r),
  session: (r) =>
    sessionId(header(r.headers, 'session-id')) ||
    sessionId(header(r.headers, 'thread-id')) ||
    sessionId(header(r.headers, 'session_id')) ||
    sessionId(header(r.headers, 'conversation_id')) ||
    (isObject(r.body) ? sessionId(r.body.prompt_cache_key) : ''),
  // Its first input items include `<environment_context>` with `<cwd>/path</cwd>`.
  project: (r) => {
    const input = isObject(r.body) ? r.body.input : undefined
    if (!Array.isArray(input)) return ''
    for (const item of input.slice(0, 8)) {
      const content = isObject(item) && Array.isArray(item.content) ? item.content.slice(0, 4) : []
      for (const c of content) {
        const t = isObject(c) && typeof c.text === 'string' ? c.text : ''
        const m = t.includes('<cwd>') ? /<cwd>([^<\n]{1,500})<\/cwd>/.exec(t.slice(0, 20_000)) : null
        if (m) return projectPath(m[1])
      }
    }
    return ''
  },
}

function hasCodexHeader(r: ClientRequest): boolean {
  for (const name in r.headers) if (name.startsWith('x-codex-')) return true
  return false
}
