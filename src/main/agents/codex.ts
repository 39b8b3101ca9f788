import { isObject } from '../metering/usage'
import { type AgentSignature, header, sessionId } from './types'

/**
 * OpenAI Codex (codex-rs): `User-Agent: codex_cli_rs/<version> (<os>; <arch>) <terminal>` and
 * `originator: codex_cli_rs` (`codex_exec` for `codex exec`, `codex_vscode` for the IDE
 * extension). Each request carries the conversation id in a `session_id` header (older
 * releases also `conversation_id`), and the Responses body repeats it as `prompt_cache_key`.
 */
export const codex: AgentSignature = {
  name: 'codex',
  matches: (r) => /^codex[_-]/i.test(r.ua) || /^codex[_-]/i.test(header(r.headers, 'originator')),
  session: (r) =>
    sessionId(header(r.headers, 'session_id')) ||
    sessionId(header(r.headers, 'conversation_id')) ||
    (isObject(r.body) ? sessionId(r.body.prompt_cache_key) : ''),
}
