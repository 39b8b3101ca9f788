import { isObject } from '../metering/usage'
import { openaiUsage } from './openai'
import { openaiCompatible } from './openai-compatible'

/**
 * OpenRouter: https://openrouter.ai/docs. Every response's usage carries `cost`, the credits
 * (USD) OpenRouter charged for the call; that is recorded as the call's cost. With a
 * bring-your-own-key upstream, `cost` is only OpenRouter's fee and the provider's own charge
 * is `cost_details.upstream_inference_cost`, so the two are added.
 */
export const openrouter = openaiCompatible({
  name: 'openrouter',
  pricingId: 'openrouter',
  baseUrl: 'https://openrouter.ai/api/v1',
  usage: (raw) => {
    const u = openaiUsage(raw)
    if (!u || !isObject(raw) || !isFiniteNonNeg(raw.cost)) return u
    let cost = raw.cost as number
    const upstream = isObject(raw.cost_details) ? raw.cost_details.upstream_inference_cost : undefined
    if (raw.is_byok === true && isFiniteNonNeg(upstream)) cost += upstream as number
    u.provider_cost_usd = cost
    return u
  },
})

function isFiniteNonNeg(v: unknown): boolean {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0
}
