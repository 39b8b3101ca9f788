import { isObject } from '../metering/usage'
import { openaiUsage } from './openai'
import { openaiCompatible } from './openai-compatible'

/**
 * Perplexity Sonar: https://docs.perplexity.ai. Its base URL has no `/v1`
 * (`https://api.perplexity.ai/chat/completions`); the mount `/perplexity/v1` stands for it.
 * Sonar bills a per-request fee that depends on the search context size; the response's
 * `usage.cost.total_cost` is the whole charge and is recorded as the call's cost when present.
 */
export const perplexity = openaiCompatible({
  name: 'perplexity',
  pricingId: 'perplexity',
  baseUrl: 'https://api.perplexity.ai',
  usage: (raw) => {
    const u = openaiUsage(raw)
    if (!u || !isObject(raw) || !isObject(raw.cost)) return u
    const total = raw.cost.total_cost
    if (typeof total === 'number' && Number.isFinite(total) && total >= 0) u.provider_cost_usd = total
    return u
  },
})
