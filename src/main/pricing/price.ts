import type { Provider as PriceProvider } from '@pydantic/genai-prices'
import { DATA_RESIDENCY_MULTIPLIER, type Usage, reportedUsd } from '../metering/usage'
import { loadOnce } from '../server/load-once'
import { priceWithAdvisor } from './advisor'
import { isClaude } from './claude-1h'
import { loadPriceLibrary } from './library'
import { type FeeMarks, LibraryPrices, MAX_LOOKUPS, type Priced, safeCalc } from './library-prices'
import { toLibraryUsage, withExtra } from './library-usage'
import { priceToolImages } from './tool-images'
import { type OverrideTable, type PriceOverride, toProvider } from './override-table'
import { OPENAI_TIER_PRICING_IDS, PRIORITY_WARNED_PRICING_IDS, hasPriorityPrices } from './priority-prices'
import { UNPRICED_USE_WARNED } from './tool-fees'
import { GEMINI_GROUNDED_PROMPT_KCOUNT, GEMINI_SEARCH_QUERY_KCOUNT, type SearchGroundingPricing, billedPerPrompt, groundingUnits, searchGroundingUsd } from './search-grounding'

export type { Priced } from './library-prices'
export type { PriceOverride } from './override-table'

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

/**
 * Prices usage with @pydantic/genai-prices' data (bundled, or the newer data ./update.ts
 * fetched), or with an override: a runtime price from the admin API, then the config's
 * `pricing.overrides`, both win over the library; a charge the provider reported wins over all.
 * A model none knows is `priced: false` with cost 0: recorded, shown as unpriced, never guessed.
 */
export class Pricer {
  private readonly overrides: OverrideTable[]
  /** Runtime prices by `provider \0 model`. */
  private runtime = new Map<string, PriceProvider>()
  /** The library's prices, each model's lookup remembered (./library-prices.ts). */
  private readonly library = new LibraryPrices((msg) => this.warn(msg))

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
  /** Models whose Priority-served calls were priced at a standard rate, each warned about once (`warn`). */
  private readonly fastWarned = new Set<string>()
  /** Per-use counts warned about as unpriced (`unpricedUse`), once per model and count. */
  private readonly usesWarned = new Set<string>()
  /** Models whose Google Search grounding was priced at $0 (`searchGrounding: free`), each said once (`warn`). */
  private readonly groundingWarned = new Set<string>()

  /**
   * `warn`: told once per model when the library refuses a call's modality split and the call is
   * priced at the base token rates instead (its audio, image or video parts at the text rate),
   * when a call OpenAI's Priority processing served is priced at a standard rate, and when a call
   * carries a per-use count (web or file searches) that its model's table has no price for
   * (./tool-fees.ts), so that a price lower than billed does not go unseen (the server's log).
   * `searchGrounding`: how a Gemini call's Grounding with Google Search is priced, the config's
   * `pricing.google_search_grounding` (./search-grounding.ts): `free` at $0 (told to `warn` once per
   * model), `paid` at Google's list.
   */
  constructor(
    overrides: readonly PriceOverride[] = [],
    private readonly warn: (msg: string) => void = () => {},
    readonly searchGrounding: SearchGroundingPricing = 'free',
  ) {
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
    this.library.clear()
    this.usesWarned.clear()
  }

  /**
   * Order: the charge the provider reported itself (OpenRouter's and Perplexity's `usage.cost`:
   * what was billed, so no price set here knows better), a runtime price for the provider's
   * model, a config override for the model, then the library. The same order prices a new call
   * and re-prices a recorded one, so re-pricing never moves a reported charge. Modality
   * splits (`usage.extra`) are priced where the model has their own rate; if the library cannot
   * use them, the call is priced without them (at the base rates) rather than left unpriced,
   * and `warn` is told (once per model). Images a Responses image tool made (`usage.tool_images`)
   * are a second part, priced at their image model's price.
   */
  price(pricingId: string, providerName: string, model: string, usage: Usage, at: Date): Priced {
    const reported = reportedUsd(usage.provider_cost_usd)
    if (reported !== undefined) {
      return { cost_usd: reported, priced: true }
    }
    // A Batch API request whose batch rate is not known (Groq's, Together's): its tokens are
    // kept unpriced rather than priced at a guessed discount, a user's price included (it is
    // the model's list price, not its batch price).
    if (usage.batch_rate_unknown) return { cost_usd: 0, priced: false }
    // A call billed by the time it ran (xAI's voice agent) with no charge reported: no token price is its bill.
    if (usage.billed_by_time) return { cost_usd: 0, priced: false }
    // Parts other models ran (Claude's advisor tool), each priced at its model (./advisor.ts).
    const advisor = usage.advisor
    if (advisor) return priceWithAdvisor(model, usage, advisor, (m, u) => this.price(pricingId, providerName, m, u, at))
    let main = usage.batch || usage.data_residency ? this.adjustedPrice(pricingId, providerName, model, usage, at) : this.listPrice(pricingId, providerName, model, usage, at)
    if (usage.tool_images) {
      // The images an image tool made, priced at their image model (./tool-images.ts): the call is
      // priced only when both parts are.
      const images = priceToolImages(usage.tool_images, (m, u) => this.listPrice(pricingId, providerName, m, u, at))
      main = main.priced && images.priced ? { cost_usd: main.cost_usd + images.cost_usd, priced: true } : { cost_usd: 0, priced: false }
    }
    return usage.google_search_queries || usage.google_search_grounded ? this.withSearchGrounding(pricingId, model, usage, main) : main
  }

  /**
   * A Gemini call's Grounding with Google Search (./search-grounding.ts) on top of its price `p`:
   * with `searchGrounding: paid`, Google's list for its queries or grounded prompt (whatever priced
   * its tokens, as a per-use charge); with `free`, nothing, and `warn` is told once per model.
   */
  private withSearchGrounding(pricingId: string, model: string, usage: Usage, p: Priced): Priced {
    if (pricingId !== 'google') return p
    if (this.searchGrounding === 'paid') return p.priced ? { cost_usd: p.cost_usd + searchGroundingUsd(model, usage), priced: true } : p
    if (this.groundingWarned.has(model) || this.groundingWarned.size >= MAX_LOOKUPS) return p
    this.groundingWarned.add(model)
    const list = billedPerPrompt(model) ? `$${GEMINI_GROUNDED_PROMPT_KCOUNT} per 1,000 grounded prompts` : `$${GEMINI_SEARCH_QUERY_KCOUNT} per 1,000 search queries`
    this.warn(
      `pricing: google ${model.slice(0, 100)}: a call's Grounding with Google Search (${groundingUnits(model, usage)}) is recorded (calls.usage_extra) and priced at $0: Google bills it only past the project's free allowance, which Burnrate cannot see; set pricing.google_search_grounding: paid to price it at list (${list})`,
    )
    return p
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

  /**
   * The price the model's list gives (runtime price, override, library), without the provider's
   * own charge. A call a fast tier served (`usage.fast`) takes a `speed: fast` override first,
   * then the usual prices, the library's at the model's Priority prices where OpenAI or Google
   * publishes them, at its fast-mode price where Anthropic does (./priority-prices.ts); one of
   * OpenAI's, Google's or Anthropic's priced at a standard rate is told to `warn`.
   */
  private listPrice(pricingId: string, providerName: string, model: string, usage: Usage, at: Date): Priced {
    const u = toLibraryUsage(usage)
    const fast = usage.fast === true
    // A call a fast tier served: its model's fast price, when one is set (the price data has none).
    if (fast) {
      const r = this.override(u, providerName, model, true)
      if (r) return r
    }
    const user = this.userPrice(u, providerName, model)
    if (user) {
      if (fast) this.fastAtStandard(pricingId, providerName, model)
      return user
    }
    if (!model) return { cost_usd: 0, priced: false }
    const fine = withExtra(u, usage)
    // What changes the model's prices (a property check for a call that has none).
    const marks: FeeMarks | undefined =
      fast || usage.search_context_size || usage.web_search_preview
        ? { fast, provider: providerName, size: usage.search_context_size, pro: usage.pro_search === true, previewSearch: usage.web_search_preview === true }
        : undefined
    let p: Priced | null = fine ? this.library.price(fine, pricingId, model, at, marks) : null
    if (!p) {
      // Audio tokens with no price of their own (Azure's gpt-4o-audio-preview): unpriced, not at the text rate.
      if (fine && this.library.lacksAudioPrice(fine, pricingId, model, at)) return { cost_usd: 0, priced: false }
      p = this.library.price(u, pricingId, model, at, marks)
      if (!p) return { cost_usd: 0, priced: false }
      if (fine) this.refusedSplit(pricingId, model, fine, u)
    }
    if (fast && !hasPriorityPrices(pricingId, providerName, model, this.library.tableId(pricingId, model))) this.fastAtStandard(pricingId, providerName, model)
    if (u.web_searches || u.storage_searches) this.unpricedUse(pricingId, model, u)
    return p
  }

  /** A runtime price for the provider's model, then a standard `pricing.overrides` entry: the user's own prices. */
  private userPrice(u: Record<string, number>, providerName: string, model: string): Priced | null {
    if (this.runtime.size > 0) {
      const rt = this.runtime.get(`${providerName}\0${model}`)
      if (rt) {
        const r = safeCalc(u, model, { provider: rt })
        if (r) return r
      }
    }
    return this.override(u, providerName, model, false)
  }

  /**
   * Says once per provider and model that a call a Priority tier served (OpenAI's Priority
   * processing, now Fast mode; the Gemini API's priority tier; Vertex AI's Priority PayGo;
   * Anthropic's fast mode, on Vertex AI's Claude models too, in fast mode's words) is
   * priced at a standard rate, below what is billed: no Priority price is known for the model
   * (./priority-prices.ts) and no `pricing.overrides` entry with `speed: fast` prices it.
   */
  private fastAtStandard(pricingId: string, providerName: string, model: string): void {
    if (!PRIORITY_WARNED_PRICING_IDS.has(pricingId)) return
    const key = `${providerName}\0${model}`
    if (this.fastWarned.has(key) || this.fastWarned.size >= MAX_LOOKUPS) return
    this.fastWarned.add(key)
    // Vertex AI's Claude models are priced as Google's, but only Claude's fast mode serves them fast (their `usage.speed`).
    const tier =
      pricingId === 'google' && !isClaudeModel(model)
        ? 'its priority tier'
        : OPENAI_TIER_PRICING_IDS.has(pricingId)
          ? 'Priority processing (Fast mode)'
          : pricingId === 'aws'
            ? "fast mode or Bedrock's Priority tier"
            : 'fast mode'
    const price = tier === 'fast mode' ? 'fast-mode' : pricingId === 'aws' ? 'fast-mode or Priority' : 'Priority'
    this.warn(`pricing: ${providerName} ${model.slice(0, 100)} served at ${tier} is priced at its standard rate, which is less than billed: no ${price} price is known for it; add a pricing.overrides entry with speed: fast for it`)
  }

  /**
   * Says once per model and count when a call carries a per-use count (`u`: web or file searches) that its
   * model's table prices at nothing, where such counts are always billed (./tool-fees.ts
   * `UNPRICED_USE_WARNED`), from what the library's lookup of the model found.
   */
  private unpricedUse(pricingId: string, model: string, u: Record<string, number>): void {
    if (!UNPRICED_USE_WARNED.has(pricingId)) return
    const unpriced = this.library.unpriced(pricingId, model)
    if (!unpriced || unpriced.length === 0) return
    for (const k of unpriced) {
      const key = `${pricingId}\0${model}\0${k}`
      if (!(u[k] > 0) || this.usesWarned.has(key) || this.usesWarned.size >= MAX_LOOKUPS) continue
      this.usesWarned.add(key)
      this.warn(
        `pricing: a call's ${k} have no price in the price data for ${pricingId} ${model.slice(0, 100)}; they are recorded (calls.usage_extra) and priced at $0, which may be less than billed`,
      )
    }
  }

  /** Says once per model that the library refused the split `fine` adds to the usage `u`. */
  private refusedSplit(pricingId: string, model: string, fine: Record<string, number>, u: Record<string, number>): void {
    const key = `${pricingId}\0${model}`
    if (this.splitRefused.has(key) || this.splitRefused.size >= MAX_LOOKUPS) return
    this.splitRefused.add(key)
    const parts = Object.keys(fine).filter((k) => !(k in u)).join(', ')
    this.warn(`pricing: the price data for ${pricingId} ${model.slice(0, 100)} refused a call's split (${parts}); it is priced at the base token rates, which may be less than billed`)
  }

  /** The first `pricing.overrides` entry of this speed (fast or standard) that prices the provider's model. */
  private override(u: Record<string, number>, providerName: string, model: string, fast: boolean): Priced | null {
    for (const o of this.overrides) {
      if (o.fast !== fast || (o.provider && o.provider !== providerName)) continue
      // An entry for any model (`*`) prices a Claude model's cache as Anthropic bills it, as one naming it does.
      const r = safeCalc(u, model, { provider: o.claude && isClaude(model) ? o.claude : o.price })
      if (r) return r
    }
    return null
  }
}

/** A Claude model's id as Vertex AI and Anthropic name it (`claude-opus-4-6`, `claude-sonnet-4-5@20250929`): fast mode, not a priority tier, is its fast speed. */
function isClaudeModel(model: string): boolean {
  return model.startsWith('claude-')
}
