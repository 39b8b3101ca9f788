import type { ModelInfo } from '@pydantic/genai-prices'

/**
 * A shortcut through @pydantic/genai-prices for the common case, giving the library's own
 * result bit for bit. The library validates the whole price table (unit ancestry, overlaps,
 * joins) on every call; for a table of plain per-million-token prices that work is the same
 * every time, and what is left is a few multiplications, done here in the library's order:
 *
 * - leaves: `input_tokens` minus the cache reads and writes the table prices separately (they
 *   are parts of it); each other count is its own leaf;
 * - each price times its leaf / 1e6, summed per direction in the table's key order
 *   (input-side prices into one sum, output into another), total = input + output + other.
 *
 * Only tables whose every price is a number under one of the keys below are taken, and only
 * usage made of the four token counts; anything else (tiers, date or time-of-day prices,
 * modalities, 1-hour cache writes or web searches that were used, a per-request fee) goes to
 * the library. `Pricer` also checks the first calls of each model against the library and
 * drops the shortcut for that model if they ever differ.
 */

/** Keys priced per million tokens that the shortcut computes, and the usage count of each. */
const TOKEN_KEYS: Record<string, 'input_tokens' | 'output_tokens' | 'cache_read_tokens' | 'cache_write_tokens'> = {
  input_mtok: 'input_tokens',
  output_mtok: 'output_tokens',
  cache_read_mtok: 'cache_read_tokens',
  cache_write_mtok: 'cache_write_tokens',
}
/** Keys a table may also have, priced at 0 here because their usage is 0: the shortcut is not taken when it is not. */
const UNUSED_KEYS = new Set(['cache_write_1h_mtok', 'web_searches_kcount', 'storage_searches_kcount'])
const USAGE_KEYS = new Set(['input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens'])

export interface FlatTable {
  /** In the table's key order: the price, and which count it multiplies. */
  prices: { price: number; leaf: 'input' | 'output' | 'cache_read' | 'cache_write' }[]
  readRecorded: boolean
  writeRecorded: boolean
}

/** The shortcut's view of a model's prices, or null when the library must price it. */
export function flatTable(model: ModelInfo): FlatTable | null {
  const p = model.prices
  if (Array.isArray(p) || typeof p !== 'object' || p === null) return null
  const prices: FlatTable['prices'] = []
  for (const [key, value] of Object.entries(p)) {
    if (value === undefined) continue
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return null
    const count = TOKEN_KEYS[key]
    if (count) prices.push({ price: value, leaf: count.replace('_tokens', '') as FlatTable['prices'][number]['leaf'] })
    else if (!UNUSED_KEYS.has(key)) return null
  }
  const has = (k: string) => typeof (p as Record<string, unknown>)[k] === 'number'
  // The library requires input and output prices, and a 5-minute write price under a 1-hour one.
  if (!has('input_mtok') || !has('output_mtok')) return null
  if (has('cache_write_1h_mtok') && !has('cache_write_mtok')) return null
  return { prices, readRecorded: has('cache_read_mtok'), writeRecorded: has('cache_write_mtok') }
}

/**
 * The library's total for `usage` (library usage keys) under `table`; `undefined` when the
 * shortcut does not apply (or the total is no finite number), null when the library would refuse the usage (a cache count larger
 * than the prompt it is part of).
 */
export function flatPrice(table: FlatTable, usage: Record<string, number>): number | null | undefined {
  for (const k in usage) if (!USAGE_KEYS.has(k)) return undefined
  const input = usage.input_tokens ?? 0
  const output = usage.output_tokens ?? 0
  const read = usage.cache_read_tokens ?? 0
  const write = usage.cache_write_tokens ?? 0
  if (!countable(input) || !countable(output) || !countable(read) || !countable(write)) return undefined
  const inputLeaf = input - ((table.readRecorded ? read : 0) + (table.writeRecorded ? write : 0))
  if (inputLeaf < 0) return null
  let inSum = 0
  let outSum = 0
  for (const { price, leaf } of table.prices) {
    const n = leaf === 'input' ? inputLeaf : leaf === 'output' ? output : leaf === 'cache_read' ? read : write
    const amount = (price * n) / 1e6
    if (leaf === 'output') outSum += amount
    else inSum += amount
  }
  const total = inSum + outSum + 0
  // A cost past what a number holds (a price of 1e305 per million): the library's to refuse, never a priced Infinity.
  return Number.isFinite(total) ? total : undefined
}

function countable(v: number): boolean {
  return Number.isSafeInteger(v) && v >= 0
}
