import type { ConditionalPrice, ModelInfo, ModelPrice, Provider as PriceProvider } from '@pydantic/genai-prices'
import { appliedPrice } from './library'

/** OpenAI's price of one model's audio tokens (USD per 1M), from `from` (a UTC date) until the next one's. */
interface AudioPrice {
  from?: string
  input_audio_mtok: number
  output_audio_mtok: number
}

/**
 * OpenAI bills the audio tokens of its Chat Completions audio models far above their text tokens.
 * The price data (@pydantic/genai-prices 0.1.8) gives gpt-4o-audio-preview and
 * gpt-4o-mini-audio-preview their text prices only ($2.50 / $10 and $0.15 / $0.60 per 1M), and
 * the library prices a count with no price of its own at the price above it: a call's audio at
 * the text rate, 16x (gpt-4o-audio-preview's input) to 67x (the mini's) less than billed. The
 * data has OpenAI's audio prices for its other audio models (gpt-realtime, gpt-audio and their
 * minis, gpt-4o-realtime-preview, gpt-4o-mini-realtime-preview), kept as they are.
 *
 * OpenAI's published audio prices, per 1M tokens, input / output:
 * - gpt-4o-audio-preview-2024-12-17 and -2025-06-03: $40 / $80 (OpenAI's model page,
 *   developers.openai.com/api/docs/models/gpt-4o-audio-preview: "Audio tokens … Input $40 …
 *   Output $80", text $2.50 / $10; the 2024-12-17 snapshot's launch, openai.com/index/o1-and-new-tools-for-developers,
 *   Dec 17, 2024, made audio 60% cheaper).
 * - gpt-4o-audio-preview-2024-10-01, the first snapshot: $100 / $200 (the pricing page as OpenAI
 *   staff's launch post quotes it, community.openai.com/t/983234, Oct 17, 2024: "gpt-4o-audio-preview-2024-10-01
 *   … Audio in: $100.00 / 1M tokens, out: $200.00 / 1M tokens"), the Realtime API's audio prices
 *   of the time (openai.com/index/introducing-the-realtime-api). Kept after Dec 17, 2024, as the
 *   older Realtime snapshot kept its own prices then.
 * - gpt-4o-audio-preview, the name without a date: the 2024-10-01 snapshot's prices until
 *   Dec 17, 2024 (the only snapshot before then), the later snapshots' $40 / $80 from then on.
 * - gpt-4o-mini-audio-preview and its one snapshot, -2024-12-17: $10 / $20 (OpenAI's model page,
 *   developers.openai.com/api/docs/models/gpt-4o-mini-audio-preview: "Audio tokens … Input $10 …
 *   Output $20", text $0.15 / $0.60).
 *
 * Given to the `openai` price data only. Azure OpenAI's list prices these models apart, and no
 * published Azure audio price was found: an Azure call with audio tokens of them is recorded
 * unpriced (`unpricedAudio`), not priced at the text rate; one without audio tokens stays priced.
 * Each price is given only where the data's price has none of its own (per dated price, per
 * side), so a price-data update that adds OpenAI's takes over; `pricing.overrides` and runtime
 * prices win over the library, these prices included.
 */
const GPT_4O_AUDIO_LAUNCH: AudioPrice = { input_audio_mtok: 100, output_audio_mtok: 200 }
const GPT_4O_AUDIO_DEC_2024: AudioPrice = { input_audio_mtok: 40, output_audio_mtok: 80 }
const GPT_4O_MINI_AUDIO: AudioPrice = { input_audio_mtok: 10, output_audio_mtok: 20 }

export const OPENAI_AUDIO_PRICES: Readonly<Record<string, readonly AudioPrice[]>> = {
  'gpt-4o-audio-preview': [GPT_4O_AUDIO_LAUNCH, { ...GPT_4O_AUDIO_DEC_2024, from: '2024-12-17' }],
  'gpt-4o-audio-preview-2024-10-01': [GPT_4O_AUDIO_LAUNCH],
  'gpt-4o-audio-preview-2024-12-17': [GPT_4O_AUDIO_DEC_2024],
  'gpt-4o-audio-preview-2025-06-03': [GPT_4O_AUDIO_DEC_2024],
  'gpt-4o-mini-audio-preview': [GPT_4O_MINI_AUDIO],
  'gpt-4o-mini-audio-preview-2024-12-17': [GPT_4O_MINI_AUDIO],
}

const OPENAI_PRICING_ID = 'openai'
/** The price data whose models' lists are OpenAI's or priced like them (Azure OpenAI's falls back to OpenAI's tables). */
const OPENAI_PRICING_IDS: ReadonlySet<string> = new Set([OPENAI_PRICING_ID, 'azure'])
/** The data's tables of OpenAI's models that bill audio tokens at rates of their own (gpt-4o-audio-preview, gpt-realtime, gpt-audio…). */
const AUDIO_MODEL = /audio|realtime/i

const KEYS = ['input_audio_mtok', 'output_audio_mtok'] as const

/**
 * `model`'s table (`table`, the data's, found for a call of `model`) with OpenAI's audio prices
 * it lacks (above); the same object when none is added.
 */
export function withAudioPrices(pricingId: string, model: string, table: ModelInfo): ModelInfo {
  if (pricingId !== OPENAI_PRICING_ID) return table
  const audio = OPENAI_AUDIO_PRICES[model.toLowerCase()]
  if (!audio) return table
  const p = table.prices
  if (!Array.isArray(p)) {
    if (audio.length === 1) {
      const prices = filled(p, audio[0]!)
      return prices === p ? table : { ...table, prices }
    }
    const prices: ConditionalPrice[] = audio.map((a) => (a.from ? { constraint: { type: 'start_date', start_date: a.from }, prices: filled(p, a) } : { prices: filled(p, a) }))
    return prices.every((c) => c.prices === p) ? table : { ...table, prices }
  }
  // Dated prices: each keeps its date, with the audio price of its start (the first, undated,
  // the first's); a date of ours within them starts a price of its own, the data's of that date
  // with our audio price of it. A table with daily windows (not OpenAI's) is left as it is.
  if (p.some((c) => c.constraint && c.constraint.type !== 'start_date')) return table
  const starts = (c: ConditionalPrice) => (c.constraint?.type === 'start_date' ? c.constraint.start_date : undefined)
  const out: ConditionalPrice[] = p.map((c) => {
    const prices = filled(c.prices, audioAt(audio, starts(c)))
    return prices === c.prices ? c : { ...c, prices }
  })
  for (const a of audio) {
    if (!a.from || p.some((c) => starts(c) === a.from)) continue
    const data = dataAt(p, a.from)
    const at = out.findIndex((c) => {
      const s = starts(c)
      return s !== undefined && Date.parse(s) > Date.parse(a.from!)
    })
    out.splice(at < 0 ? out.length : at, 0, { constraint: { type: 'start_date', start_date: a.from }, prices: filled(data, a) })
  }
  return out.length === p.length && out.every((c, i) => c === p[i]) ? table : { ...table, prices: out }
}

/** `set` with each audio price it has none of given `a`'s; `set` itself when it has both. */
function filled(set: ModelPrice, a: AudioPrice): ModelPrice {
  if (KEYS.every((k) => set[k] !== undefined)) return set
  const out: ModelPrice = { ...set }
  for (const k of KEYS) if (out[k] === undefined) out[k] = a[k]
  return out
}

/** The audio price in force at `date` (undefined: the earliest). */
function audioAt(audio: readonly AudioPrice[], date: string | undefined): AudioPrice {
  let found = audio[0]!
  if (date === undefined) return found
  for (const a of audio) if (!a.from || Date.parse(a.from) <= Date.parse(date)) found = a
  return found
}

/** The data's price set in force at `date`, as the library picks it (the last whose start is not after it, else the first). */
function dataAt(p: readonly ConditionalPrice[], date: string): ModelPrice {
  for (let i = p.length - 1; i >= 0; i--) {
    const c = p[i]!.constraint
    if (!c || (c.type === 'start_date' && Date.parse(c.start_date) <= Date.parse(date))) return p[i]!.prices
  }
  return p[0]!.prices
}

/**
 * Whether `table` (a found model's, after the prices above) is one of OpenAI's audio models under
 * `openai` or `azure` with a price lacking an audio price: its calls with audio tokens may have
 * none (`pricesAudio`).
 */
export function unpricedAudio(pricingId: string, table: ModelInfo): boolean {
  if (!OPENAI_PRICING_IDS.has(pricingId) || !AUDIO_MODEL.test(table.id)) return false
  const sets = Array.isArray(table.prices) ? table.prices.map((c) => c.prices) : [table.prices]
  return sets.some((s) => KEYS.some((k) => s[k] === undefined))
}

/**
 * Whether the price that applies to a call of `model` at `at` (in `provider`, narrowed to its one
 * table) has an audio price for each side the call's usage `u` has audio tokens on (the input's,
 * cached ones included, or the output's).
 */
export function pricesAudio(u: Record<string, number>, model: string, provider: PriceProvider, at: Date): boolean {
  const input = u.input_audio_tokens > 0 || u.cache_audio_read_tokens > 0
  const output = u.output_audio_tokens > 0
  if (!input && !output) return true
  const r = appliedPrice(u, model, provider, at)
  if (!r) return false
  const set = r.model_price
  return !(input && set.input_audio_mtok === undefined) && !(output && set.output_audio_mtok === undefined)
}

/** Whether the library usage `u` has audio tokens (a price added above applies to them only). */
export function hasAudio(u: Record<string, number>): boolean {
  return u.input_audio_tokens > 0 || u.output_audio_tokens > 0 || u.cache_audio_read_tokens > 0
}
