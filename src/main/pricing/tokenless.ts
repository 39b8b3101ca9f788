import type { ModelInfo, ModelPrice, Provider as PriceProvider } from '@pydantic/genai-prices'
import { priceLibrary } from './library'

/**
 * Models the price data knows whose prices have none for tokens: xAI's grok-voice (hours of audio
 * and text messages), whisper-1, gpt-transcribe, Groq's whisper and Voxtral (hours of audio),
 * Mistral's OCR (pages). The library prices a call of one by what its prices name, so a call
 * reporting only tokens came to $0 and looked priced: free, where it was billed. Such a call is
 * priced only when it has something its model's prices price (the library's `requests_kcount`:
 * every call is one request); else it is unpriced, as a model the data does not know is. A model
 * whose prices name nothing (`{}`) is free, priced at $0, where the data says so (OpenRouter's
 * `:free`, moderation), else unpriced (./unknown-kinds.ts).
 */

/** Every token price in the data is per million tokens (`input_mtok`, `cache_audio_read_mtok`…). */
const pricesTokens = (set: ModelPrice): boolean => Object.keys(set).some((k) => set[k] !== undefined && k.endsWith('_mtok'))
const pricesNothing = (set: ModelPrice): boolean => Object.values(set).every((v) => v === undefined)

/** Whether some price set of `table` (one per date or time window) prices something, but no tokens. */
export function hasTokenlessPrices(table: ModelInfo): boolean {
  const sets = Array.isArray(table.prices) ? table.prices.map((c) => c.prices) : [table.prices]
  return sets.some((s) => !pricesNothing(s) && !pricesTokens(s))
}

/** Whether the library usage `u` counts any tokens (`input_tokens`, `output_audio_tokens`…). */
export function hasTokens(u: Record<string, number>): boolean {
  for (const k in u) if (u[k] > 0 && k.endsWith('_tokens')) return true
  return false
}

/**
 * Whether a call of `model` with usage `u` at `at` is billed for something the prices that apply
 * then (in `provider`, narrowed to the model's table) price: they price tokens, or nothing (a free
 * model), or a count the call has. The last is asked of the library itself, with each of those
 * prices set to 1: it comes to more than 0 only if the call has a count one of them prices (the
 * library's own units, an hour's price for seconds included).
 */
export function billsPricedUnits(u: Record<string, number>, model: string, provider: PriceProvider, at: Date): boolean {
  const calc = priceLibrary().calcPrice
  try {
    const r = calc(u, model, { provider, timestamp: at })
    if (!r) return false
    const set = r.model_price
    if (pricesTokens(set) || pricesNothing(set)) return true
    const ones: ModelPrice = {}
    for (const k of Object.keys(set)) if (set[k] !== undefined) ones[k] = 1
    const probe = calc(u, model, { provider: { ...provider, models: [{ ...r.model, prices: ones }] } })
    return (probe?.total_price ?? 0) > 0
  } catch {
    return false
  }
}
