import { join } from 'node:path'
import { tomlFormat } from '../formats/toml'
import { anyExists, onPath } from '../paths'
import type { AgentConnector, ConnectContext } from '../types'
import { codexProviderNote } from './codex-provider'

function codexHome(ctx: ConnectContext): string {
  return ctx.env.CODEX_HOME || join(ctx.home, '.codex')
}

/**
 * Codex CLI: `openai_base_url` at the top of `config.toml` (in `$CODEX_HOME`, else `~/.codex`).
 * Codex 0.171 ignores the OPENAI_BASE_URL environment variable; this key moves its built-in
 * OpenAI provider, so the user's login and their other providers and profiles stay as they are.
 * Logged in with ChatGPT, Codex sends that login's calls to the same address; Burnrate passes
 * them on to the ChatGPT backend (../../proxy/routes.ts), so one line serves both logins. A
 * config choosing another model provider keeps Codex's calls away from Burnrate: said, not refused.
 */
export const codex: AgentConnector = {
  id: 'codex',
  name: 'Codex CLI',
  recordedAs: ['codex'],
  installed: (ctx) => anyExists(codexHome(ctx)) || onPath(ctx, 'codex'),
  files: (ctx, url) => [{ path: join(codexHome(ctx), 'config.toml'), format: tomlFormat, settings: [{ key: ['openai_base_url'], value: `${url}/v1` }] }],
  // A model_provider other than the built-in openai (top level or the active profile's) is not
  // moved by openai_base_url: connected all the same, and said (./codex-provider.ts).
  bypassNote: codexProviderNote,
  note: 'Applies to Codex sessions started from now on, with the built-in OpenAI provider.',
}
