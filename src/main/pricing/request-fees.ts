import type { ModelInfo, ModelPrice } from '@pydantic/genai-prices'
import type { SearchContextSize } from '../metering/usage'
import { mapModelPrices } from './model-prices'

/**
 * Perplexity bills its Sonar models a fee per request that depends on the search context size
 * the call ran with (docs.perplexity.ai/getting-started/pricing, "Request Pricing", per 1,000
 * requests). The price data has one fee per model, its `requests_kcount`, and takes the highest
 * ("Prices per request vary based on usage, this is not represented here, instead we just take the
 * highest price"), and its Perplexity extractor reads no context size: every call priced by it
 * pays the high context's fee, $12 per 1,000 Sonar requests where the usual low one is billed $5.
 *
 * `withRequestFee` gives a model the fee of a call's context size (`Usage.search_context_size`)
 * in place of the data's, in each of its dated prices; every other price is the data's. A model
 * listed here whose data fee is not the high one below is left as the data has it: the data then
 * knows something this table does not (a new fee), and is trusted. A model not listed (Sonar Deep
 * Research, billed per search instead) or with no request fee is returned as it is.
 */
export const PERPLEXITY_REQUEST_FEES: Readonly<Record<string, Readonly<Record<SearchContextSize, number>>>> = {
  sonar: { low: 5, medium: 8, high: 12 },
  'sonar-reasoning': { low: 5, medium: 8, high: 12 },
  'sonar-pro': { low: 6, medium: 10, high: 14 },
  'sonar-reasoning-pro': { low: 6, medium: 10, high: 14 },
}

/**
 * The request fees of Pro Search for Sonar Pro (`web_search_options.search_type: "pro"` on a
 * stream: `Usage.pro_search`), per 1,000 requests by search context size, where Sonar Pro's
 * standard ("fast") search is billed the fees above (docs.perplexity.ai/getting-started/pricing,
 * "Pro Search Pricing"; docs.perplexity.ai/docs/sonar/pro-search/quickstart, "Pricing").
 */
export const PERPLEXITY_PRO_SEARCH_FEES: Readonly<Record<string, Readonly<Record<SearchContextSize, number>>>> = {
  'sonar-pro': { low: 14, medium: 18, high: 22 },
}

/** The price data's id of the provider whose fees these are. */
export const PERPLEXITY_PRICING_ID = 'perplexity'

/**
 * `model` with the request fee of a call's context size `size`, Pro Search's (a model that has
 * one) when `proSearch`; see above.
 */
export function withRequestFee(pricingId: string, model: ModelInfo, size: SearchContextSize, proSearch = false): ModelInfo {
  const fees = pricingId === PERPLEXITY_PRICING_ID ? PERPLEXITY_REQUEST_FEES[model.id] : undefined
  if (!fees) return model
  const fee = (proSearch ? PERPLEXITY_PRO_SEARCH_FEES[model.id]?.[size] : undefined) ?? fees[size]
  const sized = (p: ModelPrice): ModelPrice => (p.requests_kcount === fees.high && fee !== fees.high ? { ...p, requests_kcount: fee } : p)
  return mapModelPrices(model, sized)
}
