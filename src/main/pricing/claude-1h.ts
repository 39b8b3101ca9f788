import type { ModelInfo, ModelPrice } from '@pydantic/genai-prices'
import { mapModelPrices } from './model-prices'

/**
 * Anthropic bills a prompt-cache write with a 1-hour lifetime at 2x the model's input price
 * (a 5-minute one at 1.25x, a cache read at 0.1x), for every Claude model and on every platform that serves them:
 * Anthropic's API, Amazon Bedrock, Vertex AI. The price data has that rate for Anthropic's own
 * API, but lacks it for most of the Claude models it lists under AWS and Google, where the
 * library then prices a 1-hour write at the 5-minute rate, 0.75x input too low per token.
 *
 * `withOneHourWrites` gives such a model its 1-hour rate: 2x its input price, tier by tier (a
 * long-context tier's input price doubles too), in each of its dated prices. A model that has
 * its own 1-hour rate, has no cache-write rate at all, or is not Claude's, is returned as it is.
 */
const ONE_HOUR_WRITE_INPUT_MULTIPLE = 2
const FIVE_MINUTE_WRITE_INPUT_MULTIPLE = 1.25
/** A cache read costs a tenth of input: divided, since 0.1 has no exact binary form ($3 reads at 0.3, not 0.30000000000000004). */
const READ_INPUT_DIVISOR = 10

const CLAUDE = /claude/i

/** Whether a model name (or an override's name or prefix) is a Claude model's. */
export function isClaude(model: string): boolean {
  return CLAUDE.test(model)
}

/**
 * A price set by hand for a Claude model (the admin API's, `pricing.overrides`) with its cache
 * rates, each one left out given Anthropic's: a 5-minute write 1.25x its input price, a 1-hour
 * write 2x, a read 0.1x. Without them the library would price every cache write and read at the
 * input price: a 1-hour write at half, a read at ten times what Anthropic bills. A rate given is
 * kept as given (another vendor's model keeps what its price says: ./override-table.ts).
 */
export function withClaudeCacheRates(prices: Readonly<Record<string, number>>): Record<string, number> {
  const input = prices.input_mtok!
  return {
    cache_read_mtok: input / READ_INPUT_DIVISOR,
    cache_write_mtok: input * FIVE_MINUTE_WRITE_INPUT_MULTIPLE,
    cache_write_1h_mtok: input * ONE_HOUR_WRITE_INPUT_MULTIPLE,
    ...prices,
  }
}

export function withOneHourWrites(model: ModelInfo): ModelInfo {
  return CLAUDE.test(model.id) ? mapModelPrices(model, derived) : model
}

function derived(p: ModelPrice): ModelPrice {
  if (p.cache_write_1h_mtok !== undefined || p.cache_write_mtok === undefined) return p
  const input = p.input_mtok
  if (typeof input === 'number') return { ...p, cache_write_1h_mtok: input * ONE_HOUR_WRITE_INPUT_MULTIPLE }
  if (input && typeof input === 'object' && typeof input.base === 'number' && Array.isArray(input.tiers)) {
    return {
      ...p,
      cache_write_1h_mtok: {
        base: input.base * ONE_HOUR_WRITE_INPUT_MULTIPLE,
        tiers: input.tiers.map((t) => ({ start: t.start, price: t.price * ONE_HOUR_WRITE_INPUT_MULTIPLE })),
      },
    }
  }
  return p
}
