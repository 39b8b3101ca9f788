import type { calcPrice, Provider as PriceProvider } from '@pydantic/genai-prices'
import type { SearchContextSize } from '../metering/usage'
import { withOneHourWrites } from './claude-1h'
import { type FlatTable, flatPrice, flatTable } from './flat'
import { priceLibrary } from './library'
import { withPriorityPrices } from './priority-prices'
import { withRequestFee } from './request-fees'

/** A call's price: `priced: false` (cost 0) when nothing knows the model. */
export interface Priced {
  cost_usd: number
  priced: boolean
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
  /** The provider with each search context size's request fee, Pro Search's apart (`LibraryPrices.sized`), null where it is the same. */
  sized?: Map<string, PriceProvider | null>
  /** The provider with the model's Priority prices (`LibraryPrices.priority`), null where it has none; made on its first fast call. */
  fast?: PriceProvider | null
}

/**
 * Prices with the library's data, remembering what each (provider, model) lookup found, so a
 * call after the first applies the model's one price table without the library's scan.
 */
export class LibraryPrices {
  /** Library lookups by pricing id, then model (no key string built per call). */
  private readonly lookups = new Map<string, Map<string, Lookup | null>>()
  private lookupCount = 0

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
   * A Perplexity call's search context size (`size`) prices it with that size's request fee
   * (./request-fees.ts; Pro Search's when `pro`), on the found model's table with that one price changed.
   * A call OpenAI's Priority processing served (`fast`) is priced at the model's Priority prices
   * (./priority-prices.ts) on the found model's table, where they are published; else as any call.
   */
  price(u: Record<string, number>, pricingId: string, model: string, at: Date, size?: SearchContextSize, pro = false, fast = false): Priced | null {
    const found = this.lookups.get(pricingId)?.get(model)
    if (found === null) return null
    if (found) {
      const priority = fast ? this.priority(found, pricingId, model) : null
      if (priority) return safeCalc(u, model, { provider: priority, timestamp: at })
      const sized = size ? this.sized(found, pricingId, size, pro) : null
      if (sized) return safeCalc(u, model, { provider: sized, timestamp: at })
      const quick = found.flat ? flatPrice(found.flat, u) : undefined
      if (quick !== undefined && found.checked >= FLAT_CHECKS) return quick === null ? null : { cost_usd: quick, priced: true }
      const lib = safeCalc(u, model, { provider: found.provider, timestamp: at })
      if (quick !== undefined) {
        found.checked++
        // Should the shortcut ever disagree with the library, the library prices this model from now on.
        if ((lib?.cost_usd ?? null) !== quick) found.flat = null
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
    // A Claude model the data gives no 1-hour cache-write rate is given Anthropic's (./claude-1h).
    const table = withOneHourWrites(r.model)
    const provider: PriceProvider = { ...r.provider, models: [table], fallback_model_providers: undefined }
    const lookup: Lookup = { provider, flat: flatTable(table), checked: 0 }
    models.set(model, lookup)
    const priority = fast ? this.priority(lookup, pricingId, model) : null
    if (priority) return safeCalc(u, model, { provider: priority, timestamp: at })
    const sized = size ? this.sized(lookup, pricingId, size, pro) : null
    if (sized) return safeCalc(u, model, { provider: sized, timestamp: at })
    if (table !== r.model && u.cache_write_1h_tokens) return safeCalc(u, model, { provider, timestamp: at })
    return Number.isFinite(r.total_price) ? { cost_usd: r.total_price, priced: true } : null
  }

  /** The found model's provider with its Priority prices, made once per lookup; null when it has none. */
  private priority(found: Lookup, pricingId: string, model: string): PriceProvider | null {
    if (found.fast !== undefined) return found.fast
    const table = withPriorityPrices(pricingId, model, found.provider.models[0]!)
    found.fast = table ? { ...found.provider, models: [table] } : null
    return found.fast
  }

  /**
   * The found model's provider with the request fee of the search context size `size` (Pro
   * Search's when `pro`), made once per size and search; null when that changes nothing (a model
   * without such fees, or the fee the data has).
   */
  private sized(found: Lookup, pricingId: string, size: SearchContextSize, pro: boolean): PriceProvider | null {
    const key = pro ? `${size}+pro` : size
    const known = found.sized?.get(key)
    if (known !== undefined) return known
    const table = found.provider.models[0]!
    const fee = withRequestFee(pricingId, table, size, pro)
    const provider = fee === table ? null : { ...found.provider, models: [fee] }
    ;(found.sized ??= new Map()).set(key, provider)
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
