import type { ModelInfo, ModelPrice, Provider as PriceProvider } from '@pydantic/genai-prices'
import { appliedPrice } from './library'

/**
 * What a model's prices in the price data do not know. The library prices a call by the prices its
 * model's table names: a count with no price of its own is priced at the nearest price above it
 * (cache reads and writes, audio, image or video tokens at the input or output price: the
 * library's own rule, kept, but for OpenAI's audio models: ./openai-audio-prices.ts), and a count nothing above prices comes to $0. So:
 * - an empty table (`prices: {}`) prices every call at $0. The data uses it for models that are
 *   free (OpenRouter's `:free` models, OpenAI's moderation, Gemma on the Gemini API, GitHub
 *   Copilot's models, included in the subscription), and as well for models whose price it does
 *   not have (OpenRouter's Lyria 3 previews, billed per song; Cerebras' retired
 *   qwen-3-coder-480b, kept "to help with tests"; Hugging Face's Apriel). Only a model the data
 *   says is free (`:free` in its name, "(free)", "free of charge", "included in the
 *   subscription") is priced at $0; a call of any other with such a table is unpriced when it
 *   counts something, as a model the data does not know;
 * - a table with token prices but no `input_mtok` (or no `output_mtok`) prices no input (output)
 *   token: Azure's davinci-002 and babbage-002 have an input price only, and Azure bills their
 *   output tokens too. A call with such tokens is unpriced, not priced at its input alone.
 */

const SAID_FREE = /:free\b|\(free\)|\bfree of charge\b|\bincluded in (?:the|a|your) subscription\b/i

/** Whether the data says the model is free: its id or name (`:free`, "(free)"), description or price comments. */
export function saidFree(m: ModelInfo): boolean {
  return [m.id, m.name, m.description, m.price_comments].some((s) => typeof s === 'string' && SAID_FREE.test(s))
}

const priced = (set: ModelPrice, k: string): boolean => set[k] !== undefined
const pricesNothing = (set: ModelPrice): boolean => Object.values(set).every((v) => v === undefined)
const pricesTokens = (set: ModelPrice): boolean => Object.keys(set).some((k) => priced(set, k) && k.endsWith('_mtok'))
/** A table with token prices, but none for one side's tokens (each token price needs its side's, `input_mtok` or `output_mtok`, in the library). */
const pricesOneSide = (set: ModelPrice): boolean => pricesTokens(set) && (!priced(set, 'input_mtok') || !priced(set, 'output_mtok'))

/** Whether some price set of `table` (one per date or time window) may leave a call's counts unknown (above). */
export function hasUnknownKinds(table: ModelInfo): boolean {
  const sets = Array.isArray(table.prices) ? table.prices.map((c) => c.prices) : [table.prices]
  const free = saidFree(table)
  return sets.some((s) => (pricesNothing(s) && !free) || pricesOneSide(s))
}

/** What the library usage `u` counts: anything, and tokens by side (the library's output counts start with `output_`; every other token count, cache counts included, is input). */
function counts(u: Record<string, number>): { any: boolean; input: boolean; output: boolean } {
  const c = { any: false, input: false, output: false }
  for (const k in u) {
    if (!(u[k] > 0)) continue
    c.any = true
    if (!k.endsWith('_tokens')) continue
    if (k.startsWith('output_')) c.output = true
    else c.input = true
  }
  return c
}

/**
 * Whether the prices that apply to a call of `model` at `at` (in `provider`, narrowed to the
 * data's own table) know every kind of count `u` has (above). The prices are the library's own
 * choice for `at` (a dated table's).
 */
export function pricesEveryKind(u: Record<string, number>, model: string, provider: PriceProvider, at: Date): boolean {
  const c = counts(u)
  if (!c.any) return true
  const r = appliedPrice(u, model, provider, at)
  if (!r) return false
  const set = r.model_price
  if (pricesNothing(set)) return saidFree(r.model)
  if (!pricesTokens(set)) return true
  return !(c.input && !priced(set, 'input_mtok')) && !(c.output && !priced(set, 'output_mtok'))
}
