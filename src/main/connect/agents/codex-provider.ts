import type { ConfigDoc } from '../formats/types'
import { isLoopbackHost } from '../../security/hosts'
import { tildify } from '../paths'
import type { AgentFile, ConnectContext } from '../types'

/**
 * Codex's built-in providers (codex-rs/model-provider-info: built_in_model_providers). A
 * `[model_providers.<id>]` of the same name in config.toml does not replace one of them
 * (merge_configured_model_providers keeps the built-in), so its base_url there is not used.
 */
const BUILT_IN = new Set(['openai', 'amazon-bedrock', 'ollama', 'lmstudio'])

/** A TOML key as written in a dotted key (`work`, `"my.work"`). */
const tomlKey = (k: string): string => (/^[A-Za-z0-9_-]+$/.test(k) ? k : JSON.stringify(k))

/** Whether `baseUrl` is an address under this Burnrate's `url` (`http://127.0.0.1:8787/v1`). */
export function underBurnrate(baseUrl: unknown, url: string): boolean {
  if (typeof baseUrl !== 'string') return false
  try {
    const b = new URL(baseUrl)
    const u = new URL(url)
    const root = u.pathname.replace(/\/+$/, '')
    // `localhost` and the loopback addresses reach the same Burnrate on its port.
    const same = b.origin === u.origin || (b.protocol === u.protocol && b.port === u.port && isLoopbackHost(b.hostname) && isLoopbackHost(u.hostname))
    return same && (b.pathname === root || b.pathname.startsWith(`${root}/`))
  } catch {
    return false
  }
}

/**
 * The provider Codex's config.toml makes it use, as Codex resolves it
 * (codex-rs/core/src/config/model_provider_resolution.rs): the active profile's `model_provider`
 * (`profile` names the profile), else the top-level `model_provider`, else its built-in `openai`.
 * `codex --profile` and `-c model_provider=…` on the command line come first, and are not seen here.
 */
export function codexProvider(doc: ConfigDoc): { id: string; key: string; why: string } {
  const profile = doc.get(['profile'])
  if (typeof profile === 'string') {
    const id = doc.get(['profiles', profile, 'model_provider'])
    if (typeof id === 'string') {
      const key = `profiles.${tomlKey(profile)}.model_provider`
      return { id, key, why: `${key} = ${JSON.stringify(id)}, the profile ${JSON.stringify(profile)} that profile = ${JSON.stringify(profile)} makes active` }
    }
  }
  const id = doc.get(['model_provider'])
  if (typeof id === 'string') return { id, key: 'model_provider', why: `model_provider = ${JSON.stringify(id)}` }
  return { id: 'openai', key: 'model_provider', why: 'the default' }
}

/**
 * Said when Codex's config chooses another provider than its built-in OpenAI one: `openai_base_url`,
 * the key Burnrate sets, applies only to that one, so Codex's calls would go around Burnrate while
 * it shows Codex connected. Not when the chosen provider is one of the user's own whose base_url is
 * this Burnrate (README's provider of its own). Null when the calls do go through Burnrate.
 */
export function codexProviderNote(ctx: ConnectContext, f: AgentFile, doc: ConfigDoc, url: string): string | null {
  const p = codexProvider(doc)
  if (p.id === 'openai') return null
  if (!BUILT_IN.has(p.id) && underBurnrate(doc.get(['model_providers', p.id, 'base_url']), url)) return null
  return (
    `${tildify(ctx, f.path)} chooses the model provider ${JSON.stringify(p.id)} (${p.why}): openai_base_url, which Burnrate sets, applies only to Codex's built-in OpenAI provider, so Codex sends its calls to that provider directly and Burnrate does not meter them. ` +
    `To meter them, remove ${p.key} (Codex then uses the built-in provider), or give Codex a provider whose base_url is ${url}/v1 (README: Point your agents at it).`
  )
}
