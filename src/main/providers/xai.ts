import { isObject, reportedUsd } from '../metering/usage'
import { openaiUsage } from './openai-usage'
import { openaiCompatible } from './openai-compatible'

/** xAI's unit of charge: 1 USD is 10^10 ticks. */
const TICKS_PER_USD = 1e10

/**
 * xAI (Grok): https://docs.x.ai/docs/api-reference. Its reasoning tokens are reported beside
 * `completion_tokens` (see `openaiUsage`). Every answer's usage (Chat Completions and Responses,
 * streamed or not) carries `cost_in_usd_ticks`, what xAI billed for the call after its cache
 * discounts and with its server-side tools (web and X search, code execution: billed per call,
 * and absent from the price data), https://docs.x.ai/developers/cost-tracking: that is the
 * call's cost.
 */
export const xai = openaiCompatible({
  name: 'xai',
  pricingId: 'x-ai',
  baseUrl: 'https://api.x.ai/v1',
  usage: (raw) => {
    const u = openaiUsage(raw)
    const ticks = isObject(raw) ? reportedUsd(raw.cost_in_usd_ticks) : undefined
    if (u && ticks !== undefined) u.provider_cost_usd = ticks / TICKS_PER_USD
    return u
  },
})
