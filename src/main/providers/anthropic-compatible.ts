import { isObject } from '../metering/usage'
import { AnthropicMeter } from './anthropic-meter'
import type { CallShape, Provider, RequestInfo } from './types'
import { withoutTrailingSlashes } from './trailing-slashes'

export interface AnthropicCompatibleOptions {
  /** The provider it belongs to (its route and ledger name): mounted at `/<name>/anthropic`. */
  name: string
  /** The provider's id in @pydantic/genai-prices: the vendor's own prices, not Anthropic's. */
  pricingId: string
  /** The vendor's Anthropic-compatible base URL, the one its docs give to `ANTHROPIC_BASE_URL`. */
  baseUrl: string
}

/**
 * A vendor's Anthropic-compatible Messages API at a base URL of its own (DeepSeek's
 * `https://api.deepseek.com/anthropic`): what Claude Code and the Anthropic SDKs call with
 * `ANTHROPIC_BASE_URL` set to it, so through Burnrate `…/<name>/anthropic`. Its answers are read
 * as Anthropic's Messages are (usage in the JSON body, or `message_start` then `message_delta`,
 * whose fields override: Z.ai counts the prompt only in the last one); the call is recorded under
 * the vendor and priced at the vendor's price for the model it names. It is a provider's
 * `anthropicApi`, moved with `providers.<name>.anthropic_base_url` and turned off with the provider.
 *
 * Only what these vendors serve is read: Messages (billable) and token counting. Anthropic's own
 * surcharges (US-only inference, fast mode) are not asked of them, so a request naming them does
 * not reserve at Anthropic's premium.
 */
export function anthropicCompatible(o: AnthropicCompatibleOptions): Provider {
  return {
    name: o.name,
    pricingId: o.pricingId,
    defaultBaseUrl: o.baseUrl,
    mount: `/${o.name}/anthropic`,
    credentials: ['x-api-key', 'authorization'],
    inspect: inspectMessages,
    meter: () => new AnthropicMeter(),
  }
}

function inspectMessages(req: RequestInfo): CallShape {
  const p = withoutTrailingSlashes(req.path)
  const body = isObject(req.body) ? req.body : undefined
  const isMessages = req.method === 'POST' && p === '/v1/messages'
  return {
    endpoint: isMessages ? 'messages' : p === '/v1/messages/count_tokens' ? 'count_tokens' : 'other',
    model: typeof body?.model === 'string' ? body.model : '',
    stream: body?.stream === true,
    billable: isMessages,
  }
}
