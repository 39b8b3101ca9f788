import type { calcPrice, Provider as PriceProvider } from '@pydantic/genai-prices'
import { DATA_RESIDENCY_MULTIPLIER, type SearchContextSize, type Usage, reportedUsd } from '../metering/usage'
import { withClaudeCacheRates, withOneHourWrites } from './claude-1h'
import { type FlatTable, flatPrice, flatTable } from './flat'
import { loadOnce } from '../server/load-once'
import { loadPriceLibrary, priceLibrary } from './library'
import { withRequestFee } from './request-fees'

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

export interface Priced {
  cost_usd: number
  priced: boolean
}

/** A price set at runtime through the admin API for one provider's model (exact name). */
export interface RuntimePrice {
  /** Burnrate's provider name, as calls record it (`openai`, `chatgpt`, `anthropic`…). */
  provider: string
  model: string
  input_mtok: number
  output_mtok: number
  cache_read_mtok?: number | null
  cache_write_mtok?: number | null
}

function toLibraryUsage(u: Usage): Record<string, number> {
  const out: Record<string, number> = { input_tokens: u.input_tokens, output_tokens: u.output_tokens }
  if (u.cache_read_tokens) out.cache_read_tokens = u.cache_read_tokens
  if (u.cache_write_tokens) out.cache_write_tokens = u.cache_write_tokens
  if (u.cache_write_1h_tokens) out.cache_write_1h_tokens = u.cache_write_1h_tokens
  if (u.web_searches) out.web_searches = u.web_searches
  if (u.storage_searches) out.storage_searches = u.storage_searches
  return out
}

/** The prompt modalities a meter may split out (`input_<m>_tokens`), each with a price of its own. */
const PROMPT_MODALITIES = ['audio', 'image', 'video'] as const
/** The prompt-cache counts (parts of the prompt), and the library's name of each one's part in a modality. */
const CACHE_PARTS = [
  ['cache_read_tokens', 'read'],
  ['cache_write_tokens', 'write'],
  ['cache_write_1h_tokens', 'write_1h'],
] as const

/**
 * The library's usage with the parts a meter split out (`Usage.extra`), or null when there are
 * none. A cached part of a modality the meter did not report (Gemini's `cacheTokensDetails` names
 * only what is cached: a text-only cache hit beside an audio prompt has no AUDIO entry) is 0: the
 * cache holds the prompt's text, as far as the text goes (beyond it, the rest is the one modality
 * left). The library requires the count once both the cache count and the modality's count are
 * positive (it cannot tell how much of each is the other), and refused such a call outright,
 * which priced all of the audio at the text rate (2.9x less for Gemini 2.5 Flash).
 */
function withExtra(base: Record<string, number>, u: Usage): Record<string, number> | null {
  if (!u.extra) return null
  let any = false
  const out = { ...base }
  for (const [k, v] of Object.entries(u.extra)) {
    if (v > 0) {
      out[k] = v
      any = true
    }
  }
  if (!any) return null
  for (const [cache, part] of CACHE_PARTS) {
    if (!(out[cache] > 0)) continue
    // The prompt's text (what no modality count claims), and the cached tokens no modality's
    // cached count claims: what of those the text cannot hold is the unnamed modality's, when
    // only one is unnamed (else the library refuses the split, and `listPrice` says so).
    let text = out.input_tokens
    let unclaimed = out[cache]
    const unnamed: string[] = []
    for (const m of PROMPT_MODALITIES) {
      const n = out[`input_${m}_tokens`]
      if (!(n > 0)) continue
      text -= n
      const key = `cache_${m}_${part}_tokens`
      if (out[key] === undefined) unnamed.push(key)
      else unclaimed -= out[key]
    }
    for (const key of unnamed) out[key] = unnamed.length === 1 ? Math.max(0, unclaimed - Math.max(0, text)) : 0
  }
  return out
}

/**
 * Prices usage with @pydantic/genai-prices' data (bundled, or the newer data ./update.ts
 * fetched), or with an override: a runtime price from the admin API, then the config's
 * `pricing.overrides`, both win over the library; a charge the provider reported wins over all.
 * A model none knows is `priced: false` with cost 0: recorded, shown as unpriced, never guessed.
 */
export class Pricer {
  private readonly overrides: { provider?: string; price: PriceProvider; fast: boolean }[]
  /** Runtime prices by `provider \0 model`. */
  private runtime = new Map<string, PriceProvider>()
  /** Library lookups by pricing id, then model (see `library`; no key string built per call). */
  private readonly lookups = new Map<string, Map<string, Lookup | null>>()
  private lookupCount = 0

  private readied = this.readiness(null)
  /** True once `ready()` has resolved: pricing needs no wait (the proxy checks this on every call). */
  isReady = false
  /**
   * Why the last attempt to get ready failed (every call it priced was refused), until one
   * succeeds; null while none has failed, loading at start-up included (`/api/health` reads it).
   */
  lastError: string | null = null

  /** Models whose modality split the library refused, each warned about once (`warn`). */
  private readonly splitRefused = new Set<string>()

  /**
   * `warn`: told once per model when the library refuses a call's modality split and the call is
   * priced at the base token rates instead (its audio, image or video parts at the text rate), so
   * that a price lower than billed does not go unseen (the server's log).
   */
  constructor(overrides: readonly PriceOverride[] = [], private readonly warn: (msg: string) => void = () => {}) {
    this.overrides = overrides.map((o, i) => toProvider(o, `burnrate-override-${i}`, 'pricing.overrides'))
  }

  /**
   * What must be done, once the library is loaded, before this Pricer prices as its server
   * would: the data folder's cached newer price data applied (./update.ts `prepare`).
   */
  prepareWith(step: () => Promise<void>): void {
    this.readied = this.readiness(step)
    this.isReady = false
  }

  /**
   * Resolves once this Pricer prices as it should: the price library loaded (./library.ts) and
   * the step `prepareWith` gave done. Every path that prices awaits it first (a failure is tried
   * again by the next caller).
   */
  ready(): Promise<void> {
    return this.readied()
  }

  /** The library loaded, then `step`: once, as `ready()` gives it, until `prepareWith` gives another. */
  private readiness(step: (() => Promise<void>) | null): () => Promise<void> {
    const readied = loadOnce(async () => {
      try {
        await loadPriceLibrary()
        if (step) await step()
      } catch (err) {
        if (this.readied === readied) this.lastError = (err as Error)?.message ?? String(err)
        throw err
      }
      if (this.readied === readied) {
        this.isReady = true
        this.lastError = null
      }
    })
    return readied
  }

  /** Replaces the runtime prices (the admin API's); later calls are priced with them. */
  setRuntime(prices: readonly RuntimePrice[]): void {
    const next = new Map<string, PriceProvider>()
    for (const p of prices) {
      next.set(`${p.provider}\0${p.model}`, toProvider({
        model: p.model,
        input_mtok: p.input_mtok,
        output_mtok: p.output_mtok,
        cache_read_mtok: p.cache_read_mtok ?? undefined,
        cache_write_mtok: p.cache_write_mtok ?? undefined,
      }, `burnrate-runtime-${p.provider}`, 'admin price').price)
    }
    this.runtime = next
  }

  /** The library's data was replaced (a price update): what was looked up in the old data is forgotten. */
  dataChanged(): void {
    this.lookups.clear()
    this.lookupCount = 0
  }

  /**
   * Order: the charge the provider reported itself (OpenRouter's and Perplexity's `usage.cost`:
   * what was billed, so no price set here knows better), a runtime price for the provider's
   * model, a config override for the model, then the library. The same order prices a new call
   * and re-prices a recorded one, so re-pricing never moves a reported charge. Modality
   * splits (`usage.extra`) are priced where the model has their own rate; if the library cannot
   * use them, the call is priced without them (at the base rates) rather than left unpriced,
   * and `warn` is told (once per model).
   */
  price(pricingId: string, providerName: string, model: string, usage: Usage, at: Date): Priced {
    const reported = reportedUsd(usage.provider_cost_usd)
    if (reported !== undefined) {
      return { cost_usd: reported, priced: true }
    }
    if (usage.batch || usage.data_residency) return this.adjustedPrice(pricingId, providerName, model, usage, at)
    return this.listPrice(pricingId, providerName, model, usage, at)
  }

  /**
   * Token prices the provider bills at a fixed multiple of the model's list, per-use charges
   * (web and file searches) in full; the price data has rates for neither:
   * - a request run through a Batch API (`usage.batch`, OpenAI's and Anthropic's, and the Flex
   *   tiers billed as they are): half of every token price (input, cached, cache writes,
   *   output). Halving is exact in binary floating point, so nothing is rounded;
   * - a call billed with a data-residency premium (`usage.data_residency`): every token price
   *   times DATA_RESIDENCY_MULTIPLIER, as Anthropic and Vertex AI publish it and Claude Code
   *   computes it (the tokens' cost times 1.1).
   */
  private adjustedPrice(pricingId: string, providerName: string, model: string, usage: Usage, at: Date): Priced {
    const tokens = this.listPrice(pricingId, providerName, model, { ...usage, web_searches: 0, storage_searches: 0 }, at)
    if (!tokens.priced) return tokens
    let cost = tokens.cost_usd
    if (usage.batch) cost = cost / 2
    if (usage.data_residency) cost = cost * DATA_RESIDENCY_MULTIPLIER
    if (!usage.web_searches && !usage.storage_searches) return { cost_usd: cost, priced: true }
    const whole = this.listPrice(pricingId, providerName, model, usage, at)
    if (!whole.priced) return whole
    return { cost_usd: cost + (whole.cost_usd - tokens.cost_usd), priced: true }
  }

  /** The price the model's list gives (runtime price, override, library), without the provider's own charge. */
  private listPrice(pricingId: string, providerName: string, model: string, usage: Usage, at: Date): Priced {
    const u = toLibraryUsage(usage)
    // A call a fast tier served: its model's fast price, when one is set (the price data has none).
    if (usage.fast) {
      const r = this.override(u, providerName, model, true)
      if (r) return r
    }
    if (this.runtime.size > 0) {
      const rt = this.runtime.get(`${providerName}\0${model}`)
      if (rt) {
        const r = safeCalc(u, model, { provider: rt })
        if (r) return r
      }
    }
    const o = this.override(u, providerName, model, false)
    if (o) return o
    if (!model) return { cost_usd: 0, priced: false }
    const fine = withExtra(u, usage)
    const size = usage.search_context_size
    const pro = usage.pro_search === true
    if (fine) {
      const split = this.library(fine, pricingId, model, at, size, pro)
      if (split) return split
    }
    const base = this.library(u, pricingId, model, at, size, pro)
    if (!base) return { cost_usd: 0, priced: false }
    if (fine) this.refusedSplit(pricingId, model, fine, u)
    return base
  }

  /** Says once per model that the library refused the split `fine` adds to the usage `u`. */
  private refusedSplit(pricingId: string, model: string, fine: Record<string, number>, u: Record<string, number>): void {
    const key = `${pricingId}\0${model}`
    if (this.splitRefused.has(key) || this.splitRefused.size >= MAX_LOOKUPS) return
    this.splitRefused.add(key)
    const parts = Object.keys(fine).filter((k) => !(k in u)).join(', ')
    this.warn(`pricing: the price data for ${pricingId} ${model.slice(0, 100)} refused a call's split (${parts}); it is priced at the base token rates, which may be less than billed`)
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

  /** The first `pricing.overrides` entry of this speed (fast or standard) that prices the provider's model. */
  private override(u: Record<string, number>, providerName: string, model: string, fast: boolean): Priced | null {
    for (const o of this.overrides) {
      if (o.fast !== fast || (o.provider && o.provider !== providerName)) continue
      const r = safeCalc(u, model, { provider: o.price })
      if (r) return r
    }
    return null
  }

  /**
   * The library's price. Finding the model is a scan of the provider's whole model list (a
   * match rule per model) on every call; the first call for a (provider, model) remembers what
   * it found, and later calls hand the library that provider narrowed to the one model, so the
   * same price table is applied by the same code without the scan. A model the library does not
   * know is remembered as such. When the library's data is replaced (`dataChanged`), every remembered lookup is forgotten.
   * A Perplexity call's search context size (`size`) prices it with that size's request fee
   * (./request-fees.ts; Pro Search's when `pro`), on the found model's table with that one price changed.
   */
  private library(u: Record<string, number>, pricingId: string, model: string, at: Date, size?: SearchContextSize, pro = false): Priced | null {
    const found = this.lookups.get(pricingId)?.get(model)
    if (found === null) return null
    if (found) {
      const sized = size ? this.sized(found, pricingId, size, pro) : null
      if (sized) return safeCalc(u, model, { provider: sized, timestamp: at })
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
    // A Claude model the data gives no 1-hour cache-write rate is given Anthropic's (./claude-1h).
    const table = withOneHourWrites(r.model)
    const provider: PriceProvider = { ...r.provider, models: [table], fallback_model_providers: undefined }
    const lookup: Lookup = { provider, flat: flatTable(table), checked: 0 }
    models.set(model, lookup)
    const sized = size ? this.sized(lookup, pricingId, size, pro) : null
    if (sized) return safeCalc(u, model, { provider: sized, timestamp: at })
    if (table !== r.model && u.cache_write_1h_tokens) return safeCalc(u, model, { provider, timestamp: at })
    return Number.isFinite(r.total_price) ? { cost_usd: r.total_price, priced: true } : null
  }
}

/** Distinct (provider, model) lookups kept; model names come from clients, so this is bounded. */
const MAX_LOOKUPS = 1024
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
  /** The provider with each search context size's request fee, Pro Search's apart (`Pricer.sized`), null where it is the same. */
  sized?: Map<string, PriceProvider | null>
}

function safeCalc(u: Record<string, number>, model: string, opts: Parameters<typeof calcPrice>[2]): Priced | null {
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

/** An override as a one-model price table the library applies itself. */
function toProvider(o: PriceOverride, id: string, name: string): { provider?: string; price: PriceProvider; fast: boolean } {
  const given: Record<string, number> = { input_mtok: o.input_mtok, output_mtok: o.output_mtok }
  if (o.cache_read_mtok !== undefined) given.cache_read_mtok = o.cache_read_mtok
  if (o.cache_write_mtok !== undefined) given.cache_write_mtok = o.cache_write_mtok
  if (o.cache_write_1h_mtok !== undefined) given.cache_write_1h_mtok = o.cache_write_1h_mtok
  // A Claude model's cache rates left out are Anthropic's multiples of its input (./claude-1h.ts):
  // the library would price its cache writes, 1-hour ones included, and reads at the input rate.
  const prices = withClaudeCacheRates(o.model, given)
  // The library needs a 5-minute write price wherever a 1-hour one is given.
  if (prices.cache_write_1h_mtok !== undefined && prices.cache_write_mtok === undefined) prices.cache_write_mtok = o.input_mtok
  const match = o.model.endsWith('*') ? { starts_with: o.model.slice(0, -1) } : { equals: o.model }
  const price: PriceProvider = { id, name, api_pattern: '.*', models: [{ id: o.model, match, prices }] }
  return { provider: o.provider, price, fast: o.speed === 'fast' }
}
