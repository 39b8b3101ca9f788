import type { ModelInfo, ModelPrice } from '@pydantic/genai-prices'
import { mapModelPrices } from './model-prices'

/**
 * Google's published Priority prices for the Gemini API, as a multiple of each token price of the
 * model's Standard list (input, cached input, output, every modality, long-context tiers too),
 * by the price data's model id. A call its Priority tier served (the answer's
 * `usageMetadata.serviceTier` is `priority`: `Usage.fast`) is billed so; the price data
 * (@pydantic/genai-prices) lists Standard prices only, so such a call was priced at the Standard
 * list, 1/1.8 of the bill.
 *
 * Source: ai.google.dev/gemini-api/docs/pricing, as the price data's `price_comments` for these
 * models quote it: "Standard tier pricing shown; Batch and Flex tiers offer 50% discount,
 * Priority tier is 1.8x" (Gemini 3.7 Flash, Gemini 3.8 Flash; their introductory rates through
 * 2026-12-31 and the list after it alike). Google's guide (ai.google.dev/gemini-api/docs/
 * optimization) gives Priority as "75% to 100% more than standard", by model: a model the price
 * data gives no multiple for is left out and priced at Standard with a warning in the log
 * (./price.ts), as are Vertex AI's Priority PayGo calls (`trafficType: ON_DEMAND_PRIORITY`),
 * whose prices Google publishes on Vertex AI's own pricing page, not carried here. A
 * `pricing.overrides` entry with `speed: fast` prices any of them, and wins over this table.
 */
export const GEMINI_PRIORITY_MULTIPLES: Readonly<Record<string, number>> = {
  'gemini-3.7-flash': 1.8,
  'gemini-3.8-flash': 1.8,
}

/** The provider (../providers/gemini.ts) whose calls Google bills at these Priority prices: the Gemini API. */
export const GEMINI_API_PROVIDER = 'gemini'

/** The Priority multiple of the price data's model `tableId` for a call of `providerName`, or undefined. */
export function geminiPriorityMultiple(providerName: string, tableId: string): number | undefined {
  if (providerName !== GEMINI_API_PROVIDER || !Object.hasOwn(GEMINI_PRIORITY_MULTIPLES, tableId)) return undefined
  return GEMINI_PRIORITY_MULTIPLES[tableId]
}

/**
 * The found price table with each token price (`…_mtok`, flat or tiered) times `multiple`, its
 * per-call and per-use prices kept.
 */
export function withPriorityMultiple(table: ModelInfo, multiple: number): ModelInfo {
  const times = (p: ModelPrice): ModelPrice => {
    const next: ModelPrice = { ...p }
    for (const [k, v] of Object.entries(p)) {
      if (!k.endsWith('_mtok') || v === undefined) continue
      next[k] = typeof v === 'number' ? v * multiple : { base: v.base * multiple, tiers: v.tiers.map((t) => ({ start: t.start, price: t.price * multiple })) }
    }
    return next
  }
  return mapModelPrices(table, times)
}
