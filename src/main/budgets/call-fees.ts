import { emptyUsage, type Usage } from '../metering/usage'
import { withUsageExtra } from '../metering/usage-extra'
import type { Pricer } from '../pricing/price'
import type { LearntUsage } from './types'

/**
 * What an answered call was charged beyond its tokens, as `expected` reservations learn it
 * (./expected.ts): its recorded cost minus what its tokens cost at the price it was recorded at.
 * That is what only its answer names: web and file searches (pricing/tool-fees.ts), the images an
 * image tool made, Google Search grounding (pricing/search-grounding.ts), and the part of a charge
 * the provider reported itself beyond the tokens' list price (Perplexity Sonar Deep Research's
 * searches and citations). The tokens are priced as the call was, with everything that sets their
 * price (tier, batch, data residency, modality splits, a Perplexity search context size, whose
 * request fee is thus in the tokens' part: a reservation counts it from the request).
 *
 * Null when it cannot be known (an unpriced call, tokens no price knows now); 0 for a call whose
 * usage kept nothing beyond its token columns (`usage_extra` null: no JSON read, nothing priced).
 * Never below 0 (a provider's own charge below the list price of its tokens).
 */
export function chargesBeyondTokens(pricer: Pricer, pricingId: string, providerName: string, call: LearntUsage): number | null {
  if (!call.priced) return null
  if (!call.usage_extra) return 0
  const u = withUsageExtra(
    {
      ...emptyUsage(),
      input_tokens: call.input_tokens,
      output_tokens: call.output_tokens,
      cache_read_tokens: call.cache_read_tokens,
      cache_write_tokens: call.cache_write_tokens,
      cache_write_1h_tokens: call.cache_write_1h_tokens,
    },
    call.usage_extra,
  )
  if (!perUse(u)) return 0
  u.web_searches = 0
  u.storage_searches = 0
  u.tool_images = undefined
  u.google_search_queries = undefined
  u.google_search_grounded = undefined
  u.provider_cost_usd = undefined
  const tokens = pricer.price(pricingId, providerName, call.model, u, new Date(call.ts))
  if (!tokens.priced) return null
  const beyond = call.cost_usd - tokens.cost_usd
  return Number.isFinite(beyond) && beyond > 0 ? beyond : 0
}

/** Whether `u` holds a charge its tokens' price does not (see above). */
function perUse(u: Usage): boolean {
  return u.web_searches > 0 || u.storage_searches > 0 || u.tool_images !== undefined || (u.google_search_queries ?? 0) > 0 || u.google_search_grounded === true || u.provider_cost_usd !== undefined
}
