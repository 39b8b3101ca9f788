import type { Provider as PriceProvider } from '@pydantic/genai-prices'
import { isClaude, withClaudeCacheRates } from './claude-1h'

/** A price set in the config (`pricing.overrides`) or through the admin API, for one model or a name prefix (`model*`). */
export interface PriceOverride {
  model: string
  provider?: string
  input_mtok: number
  output_mtok: number
  cache_read_mtok?: number
  cache_write_mtok?: number
  cache_write_1h_mtok?: number
  /** `fast`: prices only the calls a fast tier served (`Usage.fast`); `standard` (default): the others. */
  speed?: 'standard' | 'fast'
}

/** An override as the library sees it: a one-model price table, for one provider or any. */
export interface OverrideTable {
  provider?: string
  price: PriceProvider
  /**
   * The table for a Claude model, when the entry's name or prefix does not say Claude (`*` for a
   * provider's every model, `anthropic.*`) and a cache rate is left out: Anthropic's rates for it.
   */
  claude?: PriceProvider
  fast: boolean
}

/** An override as a one-model price table the library applies itself. */
export function toProvider(o: PriceOverride, id: string, name: string): OverrideTable {
  const price = table(o, isClaude(o.model), id, name)
  const derived = !isClaude(o.model) && (o.cache_read_mtok === undefined || o.cache_write_mtok === undefined || o.cache_write_1h_mtok === undefined)
  return { provider: o.provider, price, claude: derived ? table(o, true, id, name) : undefined, fast: o.speed === 'fast' }
}

/** The override's table; `claude`: for Claude models, its cache rates left out given as Anthropic's. */
function table(o: PriceOverride, claude: boolean, id: string, name: string): PriceProvider {
  const given: Record<string, number> = { input_mtok: o.input_mtok, output_mtok: o.output_mtok }
  if (o.cache_read_mtok !== undefined) given.cache_read_mtok = o.cache_read_mtok
  if (o.cache_write_mtok !== undefined) given.cache_write_mtok = o.cache_write_mtok
  if (o.cache_write_1h_mtok !== undefined) given.cache_write_1h_mtok = o.cache_write_1h_mtok
  // A Claude model's cache rates left out are Anthropic's multiples of its input (./claude-1h.ts):
  // the library would price its cache writes, 1-hour ones included, and reads at the input rate.
  const prices = claude ? withClaudeCacheRates(given) : given
  // The library needs a 5-minute write price wherever a 1-hour one is given.
  if (prices.cache_write_1h_mtok !== undefined && prices.cache_write_mtok === undefined) prices.cache_write_mtok = o.input_mtok
  // The library looks a call's model up trimmed (and lowercased): a name recorded with spaces
  // around it (a client's `"model": "qwen3 "`) is matched by its name without them.
  const match = o.model.endsWith('*') ? { starts_with: o.model.slice(0, -1).trimStart() } : { equals: o.model.trim() }
  return { id, name, api_pattern: '.*', models: [{ id: o.model, match, prices }] }
}
