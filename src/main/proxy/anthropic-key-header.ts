import type { OutgoingHttpHeaders } from 'node:http'
import type { Upstream } from './routes'

/** Anthropic's own API: where an API key is taken only in `x-api-key`. */
const ANTHROPIC_API_HOST = 'api.anthropic.com'

/** `Bearer sk-ant-api…`: an Anthropic API key (its OAuth tokens are `sk-ant-oat…`, and stay Bearer). */
const BEARER_API_KEY = /^bearer\s+(sk-ant-api\S*)\s*$/i

/**
 * An Anthropic API key sent as `Authorization: Bearer sk-ant-api…` and no `x-api-key` (Qwen Code's
 * Anthropic provider sends its key so to any address but *.anthropic.com, Burnrate's included),
 * when the call goes to Anthropic's own API (the `anthropic` provider's upstream at
 * api.anthropic.com): moved to `x-api-key`, the only header Anthropic's API takes a key in (it
 * answers a key sent as a Bearer token 401 "Invalid bearer token"). Any other upstream (a
 * gateway configured as `providers.anthropic.base_url`, which may want the Bearer) and any other
 * token (an OAuth `sk-ant-oat…`) goes as it came. Changes only the upstream request's headers:
 * the call is attributed from the client's own.
 */
export function anthropicKeyToApiKey(upstream: Upstream, headers: OutgoingHttpHeaders): void {
  if (upstream.provider.name !== 'anthropic' || upstream.hostname !== ANTHROPIC_API_HOST) return
  if (headers['x-api-key'] !== undefined) return
  const auth = headers.authorization
  if (typeof auth !== 'string') return
  const m = BEARER_API_KEY.exec(auth)
  if (!m) return
  delete headers.authorization
  headers['x-api-key'] = m[1]
}
