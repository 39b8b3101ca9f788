import type { ModelInfo, ModelPrice } from '@pydantic/genai-prices'
import { mapModelPrices } from './model-prices'

/**
 * Claude Sonnet 4 and Sonnet 4.5 took a 1M-token context window (the `context-1m-2025-08-07`
 * beta, on Anthropic's API, Amazon Bedrock and Vertex AI, until it was retired), and a request
 * whose prompt passed 200K tokens (input, cache writes and cache reads together) was billed whole
 * at the long-context rates: each input-side price (input, the 5-minute and 1-hour cache writes,
 * cache reads) twice, output 1.5x (Anthropic's pricing page: $6 and $22.50 where Sonnet's list is
 * $3 and $15). The price data has those tiers for Sonnet 4.5 on Anthropic's API, but none for
 * Sonnet 4 anywhere, nor for Sonnet 4.5 under `aws`: such calls (imported from an agent's log,
 * re-priced, or answered then) were priced at the standard rates, about half of the bill.
 *
 * `withLongContext` gives such a table the tier, from its own prices (a regional Bedrock
 * profile's 10% premium stays in both tiers). A table that has a tier on any price already is
 * left as the data has it, as is any other model (Sonnet 4.6 and later have their own).
 */
export const LONG_CONTEXT_START = 200_000
const INPUT_MULTIPLE = 2
const OUTPUT_MULTIPLE = 1.5
/** The token prices the tier changes, and by how much. */
const MULTIPLES: Readonly<Record<string, number>> = {
  input_mtok: INPUT_MULTIPLE,
  cache_write_mtok: INPUT_MULTIPLE,
  cache_write_1h_mtok: INPUT_MULTIPLE,
  cache_read_mtok: INPUT_MULTIPLE,
  output_mtok: OUTPUT_MULTIPLE,
}

/**
 * Sonnet 4 and 4.5 by the price data's ids: `claude-sonnet-4-0`, `claude-sonnet-4-5`,
 * `claude-4-sonnet` (Vertex AI's), `regional.anthropic.claude-sonnet-4-20250514-v1:0`,
 * `global.anthropic.claude-sonnet-4-5-20250929-v1:0` (Bedrock's); not `claude-sonnet-4-6`.
 */
const SONNET_4_OR_4_5 = /(?:^|\.)claude-(?:sonnet-4(?:-[05])?(?=$|@|-20\d{6})|4-sonnet(?=$|@|-20\d{6}))/

/** Whether a price data table is Sonnet 4's or Sonnet 4.5's (`SONNET_4_OR_4_5`). */
export function isLongContextSonnet(tableId: string): boolean {
  return SONNET_4_OR_4_5.test(tableId)
}

export function withLongContext(model: ModelInfo): ModelInfo {
  return isLongContextSonnet(model.id) ? mapModelPrices(model, tiered) : model
}

function tiered(p: ModelPrice): ModelPrice {
  const prices = p as Record<string, unknown>
  for (const k of Object.keys(MULTIPLES)) if (prices[k] !== undefined && typeof prices[k] !== 'number') return p
  if (typeof prices.input_mtok !== 'number') return p
  const out: Record<string, unknown> = { ...p }
  for (const [k, multiple] of Object.entries(MULTIPLES)) {
    const base = prices[k]
    if (typeof base === 'number') out[k] = { base, tiers: [{ start: LONG_CONTEXT_START, price: base * multiple }] }
  }
  return out as ModelPrice
}
