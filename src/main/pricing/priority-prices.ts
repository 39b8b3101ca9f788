import type { ModelInfo, ModelPrice } from '@pydantic/genai-prices'
import { anthropicFastMultiple } from './anthropic-fast'
import { geminiPriorityMultiple, withPriorityMultiple } from './gemini-priority'
import { mapModelPrices } from './model-prices'

/** Per-million-token prices of one model at OpenAI's Priority processing (Fast mode). */
interface PriorityPrice {
  input_mtok: number
  /** Absent where OpenAI publishes no cached-input price at Priority (gpt-4o-2024-05-13). */
  cache_read_mtok?: number
  output_mtok: number
}

/**
 * OpenAI's published prices for Priority processing, renamed Fast mode on July 30, 2026 (the
 * answer's `service_tier` is `priority` or `fast`: `Usage.fast`), per 1M tokens: input, cached
 * input, output. The price data (@pydantic/genai-prices) has no Priority prices, so a call
 * Priority served was priced at the Standard list, half of the bill for gpt-5.
 *
 * Sources: openai.com/api-priority-processing (now openai.com/api-fast-mode), the table "Price
 * per 1M input tokens / (cached) / output tokens", as published in 2025 (GPT-4.1 to o4-mini) and
 * in 2026 (GPT-5 to GPT-5.5: the same figures in every version of the page found); the guide
 * developers.openai.com/api/docs/guides/priority-processing ("Tokens served by Priority
 * processing will be billed on a per-token basis, priced at a premium relative to Standard
 * processing rates"; a request downgraded to Standard answers `service_tier: "default"` and is
 * billed at Standard). Every model here "excludes long context": a request estimated above 128K
 * prompt tokens is served, and billed, at Standard, so these are flat prices.
 *
 * Left out, priced at Standard with a warning in the log (./price.ts): models the page does not
 * list (gpt-5-nano, gpt-5.4-nano, gpt-5.3, gpt-5.1-codex-mini…) and the GPT-5.6 family, whose
 * Fast-mode prices the page has changed (Sol $10 / $1 / $60, later $8 / $0.80 / $40 with long
 * context priced apart) on a date it does not give. A `pricing.overrides` entry with `speed: fast`
 * prices any of them, and wins over this table.
 */
export const OPENAI_PRIORITY_PRICES: Readonly<Record<string, PriorityPrice>> = {
  'gpt-5.5': { input_mtok: 12.5, cache_read_mtok: 1.25, output_mtok: 75 },
  'gpt-5.4': { input_mtok: 5, cache_read_mtok: 0.5, output_mtok: 30 },
  'gpt-5.4-mini': { input_mtok: 1.5, cache_read_mtok: 0.15, output_mtok: 9 },
  'gpt-5.2': { input_mtok: 3.5, cache_read_mtok: 0.35, output_mtok: 28 },
  'gpt-5.1': { input_mtok: 2.5, cache_read_mtok: 0.25, output_mtok: 20 },
  'gpt-5.1-codex': { input_mtok: 2.5, cache_read_mtok: 0.25, output_mtok: 20 },
  'gpt-5': { input_mtok: 2.5, cache_read_mtok: 0.25, output_mtok: 20 },
  'gpt-5-codex': { input_mtok: 2.5, cache_read_mtok: 0.25, output_mtok: 20 },
  'gpt-5-mini': { input_mtok: 0.45, cache_read_mtok: 0.045, output_mtok: 3.6 },
  'gpt-4.1': { input_mtok: 3.5, cache_read_mtok: 0.875, output_mtok: 14 },
  'gpt-4.1-mini': { input_mtok: 0.7, cache_read_mtok: 0.175, output_mtok: 2.8 },
  'gpt-4.1-nano': { input_mtok: 0.2, cache_read_mtok: 0.05, output_mtok: 0.8 },
  // gpt-4o-2024-11-20 and -2024-08-06, as the page lists them; -2024-05-13 has its own prices.
  'gpt-4o': { input_mtok: 4.25, cache_read_mtok: 2.125, output_mtok: 17 },
  'gpt-4o-2024-05-13': { input_mtok: 8.75, output_mtok: 26.25 },
  'gpt-4o-mini': { input_mtok: 0.25, cache_read_mtok: 0.125, output_mtok: 1 },
  o3: { input_mtok: 3.5, cache_read_mtok: 0.875, output_mtok: 14 },
  'o4-mini': { input_mtok: 2, cache_read_mtok: 0.5, output_mtok: 8 },
}

/** The price data's id of the provider whose Priority prices these are. */
export const OPENAI_PRICING_ID = 'openai'

/** The price data's id of Google's models (the Gemini API's and Vertex AI's). */
const GOOGLE_PRICING_ID = 'google'

/** The price data's id of Anthropic's models (the Claude API's and Microsoft Foundry's). */
export const ANTHROPIC_PRICING_ID = 'anthropic'

/**
 * The price data's ids of the providers whose calls are marked fast by OpenAI's `service_tier`
 * (../providers/openai-meter.ts: OpenAI, and Azure OpenAI, whose Priority prices are not here).
 */
export const OPENAI_TIER_PRICING_IDS: ReadonlySet<string> = new Set([OPENAI_PRICING_ID, 'azure'])

/**
 * The price data's ids of the providers whose calls a fast tier served priced at a standard rate
 * are logged (./price.ts): OpenAI's tier's, Google's (the Gemini API's `serviceTier: priority`,
 * Vertex AI's `trafficType: ON_DEMAND_PRIORITY`), and Anthropic's fast mode (`usage.speed:
 * "fast"`: the Claude API, Microsoft Foundry; Bedrock's Claude models, priced as `aws`).
 */
export const PRIORITY_WARNED_PRICING_IDS: ReadonlySet<string> = new Set([...OPENAI_TIER_PRICING_IDS, GOOGLE_PRICING_ID, ANTHROPIC_PRICING_ID, 'aws'])

/** A dated snapshot of a listed model (`gpt-5-2025-08-07`, `o3-2025-04-16`). */
const SNAPSHOT = /-\d{4}-\d{2}-\d{2}$/

/** The Priority prices of the model a call is priced as: its own name, else the name its snapshot date follows. */
export function priorityPrice(pricingId: string, model: string): PriorityPrice | undefined {
  if (pricingId !== OPENAI_PRICING_ID) return undefined
  const own = OPENAI_PRIORITY_PRICES[model]
  if (own || !SNAPSHOT.test(model)) return own
  return OPENAI_PRIORITY_PRICES[model.replace(SNAPSHOT, '')]
}

/**
 * Whether a call of `providerName`'s `model`, found in the price data as `tableId`, has a published
 * Priority price here: OpenAI's by model name, the Gemini API's by the data's model id (./gemini-priority.ts).
 */
export function hasPriorityPrices(pricingId: string, providerName: string, model: string, tableId: string | undefined): boolean {
  if (pricingId === GOOGLE_PRICING_ID) return tableId !== undefined && geminiPriorityMultiple(providerName, tableId) !== undefined
  if (pricingId === ANTHROPIC_PRICING_ID) return tableId !== undefined && anthropicFastMultiple(providerName, tableId) !== undefined
  return priorityPrice(pricingId, model) !== undefined
}

/**
 * The found price table of `model` with its Priority prices: for OpenAI, its published Priority
 * prices in place of its input, cached-input and output prices (in each dated price; long-context
 * tiers dropped, Priority has none); for the Gemini API, every token price times the model's
 * Priority multiple (./gemini-priority.ts); for the Claude API and Claude in Microsoft Foundry,
 * every token price times the model's fast-mode multiple (./anthropic-fast.ts). Its other prices (web and file searches, billed per
 * call at every tier) are kept; null when the call has no published Priority price.
 */
export function withPriorityPrices(pricingId: string, providerName: string, model: string, table: ModelInfo): ModelInfo | null {
  if (pricingId === GOOGLE_PRICING_ID) {
    const multiple = geminiPriorityMultiple(providerName, table.id)
    return multiple === undefined ? null : withPriorityMultiple(table, multiple)
  }
  if (pricingId === ANTHROPIC_PRICING_ID) {
    const multiple = anthropicFastMultiple(providerName, table.id)
    return multiple === undefined ? null : withPriorityMultiple(table, multiple)
  }
  const p = priorityPrice(pricingId, model)
  if (!p) return null
  const priority = (m: ModelPrice): ModelPrice => {
    const next: ModelPrice = { ...m, input_mtok: p.input_mtok, output_mtok: p.output_mtok }
    if (p.cache_read_mtok !== undefined) next.cache_read_mtok = p.cache_read_mtok
    else delete next.cache_read_mtok
    return next
  }
  return mapModelPrices(table, priority)
}
