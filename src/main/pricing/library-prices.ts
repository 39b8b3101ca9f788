import type { calcPrice, Provider as PriceProvider } from '@pydantic/genai-prices'
import type { SearchContextSize } from '../metering/usage'
import { withOneHourWrites } from './claude-1h'
import { LONG_CONTEXT_START, withLongContext } from './claude-long-context'
import { HOLIDAYS_THROUGH, billedAt, hasPeakHours, unlisted } from './deepseek-hours'
import { type FlatTable, flatPrice, flatTable } from './flat'
import { priceLibrary } from './library'
import { hasAudio, pricesAudio, unpricedAudio, withAudioPrices } from './openai-audio-prices'
import { withPriorityPrices } from './priority-prices'
import { withRequestFee } from './request-fees'
import { billsPricedUnits, hasTokenlessPrices, hasTokens } from './tokenless'
import { type UseCount, unpricedUses, withPreviewSearchFee, withToolFees } from './tool-fees'
import { hasUnknownKinds, pricesEveryKind } from './unknown-kinds'

/** A call's price: `priced: false` (cost 0) when nothing knows the model. */
export interface Priced {
  cost_usd: number
  priced: boolean
}

/**
 * What of a call changes its model's prices: a Priority tier serving it (`fast`: the model's
 * Priority prices at `provider`, OpenAI's or the Gemini API's, ./priority-prices.ts), a Perplexity call's search context size (`size`,
 * Pro Search's fee when `pro`: ./request-fees.ts) and OpenAI's `web_search_preview` tool
 * (`previewSearch`: ./tool-fees.ts). Given only for a call that has one (`Pricer`).
 */
export interface FeeMarks {
  fast?: boolean
  /** The provider (`Provider.name`) that served a `fast` call: Google's Priority prices are the Gemini API's, not Vertex AI's. */
  provider?: string
  size?: SearchContextSize
  pro?: boolean
  previewSearch?: boolean
}

/** Distinct (provider, model) lookups kept; model names come from clients, so this is bounded. */
export const MAX_LOOKUPS = 1024
/** Calls per model priced both ways (the shortcut and the library) before the shortcut is trusted alone. */
const FLAT_CHECKS = 16

/** What the first library call found for a (provider, model). */
interface Lookup {
  /** The provider narrowed to the one model. */
  provider: PriceProvider
  /** Its price table for the exact shortcut (./flat), or null when only the library may price it. */
  flat: FlatTable | null
  /** Shortcut results compared with the library so far. */
  checked: number
  /** The per-use counts its table has no price for (./tool-fees.ts `unpricedUses`). */
  unpriced: readonly UseCount[]
  /** The provider with each set of fee marks' fees (`LibraryPrices.variant`), null where it is the same. */
  variants?: Map<string, PriceProvider | null>
  /** A DeepSeek model whose prices have DeepSeek's peak windows: priced at the time it is billed at (./deepseek-hours.ts). */
  peakHours: boolean
  /** Some of its prices price something, but no tokens (./tokenless.ts). */
  tokenless: boolean
  /** The provider narrowed to the data's own table (no fee added), when some of its prices may not know a call's counts (./unknown-kinds.ts); else null. */
  unknownKinds: PriceProvider | null
  /** One of OpenAI's audio models with a price that has no audio price, after OpenAI's are given (./openai-audio-prices.ts). */
  unpricedAudio: boolean
}

/**
 * Prices with the library's data, remembering what each (provider, model) lookup found, so a
 * call after the first applies the model's one price table without the library's scan.
 */
export class LibraryPrices {
  /** Library lookups by pricing id, then model (no key string built per call). */
  private readonly lookups = new Map<string, Map<string, Lookup | null>>()
  private lookupCount = 0
  /** The last Beijing date said to be priced at the peak price beyond the holidays listed (`billed`). */
  private unlistedSaid = ''

  /** `warn`: told once per Beijing date of a DeepSeek peak-hours call in a year whose holidays are not listed (./deepseek-hours.ts). */
  constructor(private readonly warn: (msg: string) => void = () => {}) {}

  /** The library's data was replaced (a price update): what was looked up in the old data is forgotten. */
  clear(): void {
    this.lookups.clear()
    this.lookupCount = 0
  }

  /**
   * The library's price. Finding the model is a scan of the provider's whole model list (a
   * match rule per model) on every call; the first call for a (provider, model) remembers what
   * it found, and later calls hand the library that provider narrowed to the one model, so the
   * same price table is applied by the same code without the scan. A model the library does not
   * know is remembered as such. When the library's data is replaced (`clear`), every remembered lookup is forgotten.
   * The found model's table is given the per-use fees the data lacks (./tool-fees.ts), once.
   * A call's marks (`marks`: OpenAI's or the Gemini API's Priority tier, a Perplexity call's search context
   * size, OpenAI's `web_search_preview`) price it on the found model's table with those prices changed.
   * A call with tokens of a model whose prices have none for tokens is null (unpriced) unless it has
   * something they price (./tokenless.ts): not $0, as if it were free. So is a call of a model with
   * an empty price table the data does not say is free, and one with input (output) tokens whose
   * model has token prices but none for input (output) (./unknown-kinds.ts), and one with audio
   * tokens of an OpenAI audio model whose price has no audio price, even after OpenAI's published
   * ones are given (Azure's gpt-4o-audio-preview: ./openai-audio-prices.ts), not at the text rate.
   */
  price(u: Record<string, number>, pricingId: string, model: string, at: Date, marks?: FeeMarks): Priced | null {
    const p = this.lookUp(u, pricingId, model, at, marks)
    if (!p) return p
    const found = this.lookups.get(pricingId)?.get(model)
    if (!found) return p
    if (found.unknownKinds && !pricesEveryKind(u, model, found.unknownKinds, at)) return null
    if (this.lacksAudioPrice(u, pricingId, model, at)) return null
    if (!found.tokenless || !hasTokens(u)) return p
    const provider = (marks && this.variant(found, pricingId, model, marks)) || found.provider
    return billsPricedUnits(u, model, provider, at) ? p : null
  }

  /**
   * Whether a call with usage `u` (its modality split) has audio tokens that the price found for
   * (provider, model) has no audio price for, OpenAI's published ones given (./openai-audio-prices.ts):
   * unpriced, not to be priced without its split (at the text rate). False before a lookup found it.
   */
  lacksAudioPrice(u: Record<string, number>, pricingId: string, model: string, at: Date): boolean {
    const found = this.lookups.get(pricingId)?.get(model)
    return !!found && found.unpricedAudio && hasAudio(u) && !pricesAudio(u, model, found.provider, at)
  }

  /** `price`, before the check of a model whose prices have none for tokens. */
  private lookUp(u: Record<string, number>, pricingId: string, model: string, at: Date, marks?: FeeMarks): Priced | null {
    const found = this.lookups.get(pricingId)?.get(model)
    if (found === null) return null
    if (found) {
      if (found.peakHours) at = this.billed(at)
      const varied = marks ? this.variant(found, pricingId, model, marks) : null
      if (varied) return safeCalc(u, model, { provider: varied, timestamp: at })
      const fast = found.flat ? flatPrice(found.flat, u) : undefined
      if (fast !== undefined && found.checked >= FLAT_CHECKS) return fast === null ? null : { cost_usd: fast, priced: true }
      const lib = safeCalc(u, model, { provider: found.provider, timestamp: at })
      if (fast !== undefined) {
        found.checked++
        // Should the shortcut ever disagree with the library, the library prices this model from now on.
        if ((lib?.cost_usd ?? null) !== fast) found.flat = null
      }
      return lib
    }
    const calc = priceLibrary().calcPrice
    let r: ReturnType<typeof calcPrice>
    try {
      r = calc(u, model, { providerId: pricingId, timestamp: at })
    } catch {
      return null // this usage cannot be priced; the model may still be known, so nothing is remembered
    }
    if (this.lookupCount >= MAX_LOOKUPS) {
      this.lookups.clear()
      this.lookupCount = 0
    }
    let models = this.lookups.get(pricingId)
    if (!models) {
      models = new Map()
      this.lookups.set(pricingId, models)
    }
    this.lookupCount++
    if (!r) {
      models.set(model, null)
      return null
    }
    // A Claude model the data gives no 1-hour cache-write rate is given Anthropic's (./claude-1h),
    // Claude Sonnet 4 and 4.5 their long-context tier where the data lacks it (./claude-long-context),
    // a model its provider's tool fees it lacks (./tool-fees), and an OpenAI audio model the audio
    // prices it lacks (./openai-audio-prices).
    const table = withAudioPrices(pricingId, model, withToolFees(pricingId, withLongContext(withOneHourWrites(r.model))))
    const provider: PriceProvider = { ...r.provider, models: [table], fallback_model_providers: undefined }
    const lookup: Lookup = { provider, flat: flatTable(table), checked: 0, unpriced: unpricedUses(table), peakHours: pricingId === 'deepseek' && hasPeakHours(table), tokenless: hasTokenlessPrices(r.model), unpricedAudio: unpricedAudio(pricingId, table), unknownKinds: hasUnknownKinds(r.model) ? { ...r.provider, models: [r.model], fallback_model_providers: undefined } : null }
    models.set(model, lookup)
    // Priced at the call's time: one billed at another is priced again, as found (above).
    if (lookup.peakHours && this.billed(at) !== at) return this.lookUp(u, pricingId, model, at, marks)
    const varied = marks ? this.variant(lookup, pricingId, model, marks) : null
    if (varied) return safeCalc(u, model, { provider: varied, timestamp: at })
    // The library priced the data's table: a price added to it is applied when the call has its count
    // (a long-context tier when its prompt passes the tier's start).
    if (table !== r.model && (u.cache_write_1h_tokens || u.web_searches || u.storage_searches || hasAudio(u) || u.input_tokens > LONG_CONTEXT_START)) return safeCalc(u, model, { provider, timestamp: at })
    return Number.isFinite(r.total_price) ? { cost_usd: r.total_price, priced: true } : null
  }

  /** `billedAt(at)`, saying (once per date) when it is a peak-window call in a year whose holidays are not listed. */
  private billed(at: Date): Date {
    const billed = billedAt(at)
    if (billed !== at) return billed
    const date = unlisted(at)
    if (date && date !== this.unlistedSaid) {
      this.unlistedSaid = date
      this.warn(`pricing: DeepSeek calls in the peak hours of ${date} (Beijing) are priced at the peak price; Burnrate lists China's public holidays through ${HOLIDAYS_THROUGH} only, and if this date is one DeepSeek bills them at the off-peak price, half of what is recorded`)
    }
    return at
  }

  /** The price data's id of the model table found for (provider, model); undefined before a lookup found it. */
  tableId(pricingId: string, model: string): string | undefined {
    return this.lookups.get(pricingId)?.get(model)?.provider.models[0]?.id
  }

  /** The per-use counts the table found for (provider, model) has no price for; undefined before a lookup found it. */
  unpriced(pricingId: string, model: string): readonly UseCount[] | undefined {
    return this.lookups.get(pricingId)?.get(model)?.unpriced
  }

  /**
   * The found model's provider with the prices of a call's marks: the model's Priority prices
   * where OpenAI or Google publishes them (for the provider that served the call), the request fee of a Perplexity search context size (Pro Search's
   * when `pro`), the `web_search_preview` fee; made once per set of marks; null when that changes
   * nothing (a model without such prices, or the ones the data has).
   */
  private variant(found: Lookup, pricingId: string, model: string, marks: FeeMarks): PriceProvider | null {
    const key = `${marks.fast ? `fast:${marks.provider ?? ''}+` : ''}${marks.size ?? ''}${marks.pro ? '+pro' : ''}${marks.previewSearch ? '+preview' : ''}`
    const known = found.variants?.get(key)
    if (known !== undefined) return known
    const table = found.provider.models[0]!
    let fee = (marks.fast && withPriorityPrices(pricingId, marks.provider ?? '', model, table)) || table
    if (marks.size) fee = withRequestFee(pricingId, fee, marks.size, marks.pro === true)
    if (marks.previewSearch) fee = withPreviewSearchFee(pricingId, fee)
    const provider = fee === table ? null : { ...found.provider, models: [fee] }
    ;(found.variants ??= new Map()).set(key, provider)
    return provider
  }
}

/** The library's price with `opts`, or null when it has none (or cannot decompose the usage). */
export function safeCalc(u: Record<string, number>, model: string, opts: Parameters<typeof calcPrice>[2]): Priced | null {
  // Outside the try: pricing before the library is loaded is a bug to surface, not "no price".
  const calc = priceLibrary().calcPrice
  try {
    const r = calc(u, model, opts)
    if (!r || !Number.isFinite(r.total_price)) return null
    return { cost_usd: r.total_price, priced: true }
  } catch {
    // The library throws for usage its price table cannot decompose; that is "no price", not a crash.
    return null
  }
}
