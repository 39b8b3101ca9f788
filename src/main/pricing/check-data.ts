import type { Provider } from '@pydantic/genai-prices'
import type { PriceLibrary } from './library'

/**
 * Whether newer price data may replace the data in use. The library's own check
 * (`setProviderData`) accepts any list of well-formed providers, so a download that lost
 * providers or most of a provider's models (a partial mirror, a generator bug) or whose models
 * changed format (a renamed `prices` key) would make every model it no longer prices cost $0.
 * An ordinary update is never refused for what upstream does routinely: adding models and
 * retiring a few. Nothing here is a hand-written price table or provider list: what must stay
 * priced is taken from the data in use.
 */

/**
 * Of the models a provider's data in use prices (deprecated ones aside), the new data must still
 * have this share, or all but RETIRED_FEW of them when that is fewer, and never none of them: a
 * truncated provider loses most of its list, upstream retires a handful at a time (claude-2,
 * OpenAI's ada and babbage).
 */
const KEPT_SHARE = 0.9
const RETIRED_FEW = 3
/**
 * Per provider, models both data sets list that are probed through the library (a price lookup
 * each: this runs on the main thread when the cache loads, on the first call's way, so not every
 * model is probed). The first one the data in use prices is enough to tell whether the library
 * still understands the provider's new price tables. A download is also checked model by model
 * (./check-charges.ts) before it is used and kept.
 */
const PROBE_CANDIDATES = 3
const PROBE = { input_tokens: 1_000_000, output_tokens: 1_000_000 }

type Model = Provider['models'][number]

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** A price: a finite number, never negative (a negative one would credit every call). */
function usablePrice(v: unknown): boolean {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0
}

/** One price table: every value a price or tiered prices ({base, tiers}); empty for a free model. */
function usableTable(t: unknown): boolean {
  if (!isObject(t)) return false
  return Object.values(t)
    .filter((v) => v !== undefined && v !== null)
    .every(
      (v) =>
        usablePrice(v) ||
        (isObject(v) && usablePrice(v.base) && Array.isArray(v.tiers) && v.tiers.every((tier: unknown) => isObject(tier) && usablePrice(tier.price))),
    )
}

/** A model's `prices`: one table, or a non-empty list of conditional `{prices}` tables. */
export function usablePrices(prices: unknown): boolean {
  if (Array.isArray(prices)) return prices.length > 0 && prices.every((c) => isObject(c) && usableTable(c.prices))
  return usableTable(prices)
}

/** Whether the data in use charges for the model: usable prices that are not an empty (free) table. */
export function charged(m: Model): boolean {
  return usablePrices(m.prices) && (Array.isArray(m.prices) || Object.keys(m.prices).length > 0)
}

/**
 * What `provider`'s data charges for a million input and output tokens of `model` now; 0 when it
 * cannot price it. The provider is narrowed to the one model: the library copies a provider's
 * whole model list on every lookup, so probing with the full list costs as much again per model.
 */
function probe(lib: PriceLibrary, provider: Provider, model: Model): number {
  try {
    return lib.calcPrice(PROBE, model.id, { provider: { ...provider, models: [model], fallback_model_providers: undefined } })?.total_price ?? 0
  } catch {
    return 0
  }
}

/** Why `next` (same provider) may not replace `current`'s models, or null. */
function providerRefusal(lib: PriceLibrary, current: Provider, next: Provider): string | null {
  const nextModels = new Map<string, Model>(next.models.map((m) => [m.id, m]))
  const base = current.models.filter((m) => !m.deprecated && charged(m))
  const lost = base.filter((m) => !nextModels.has(m.id)).length
  // A provider that charged for a model keeps at least one, however few it had (Cerebras has 2).
  if (lost > Math.max(RETIRED_FEW, Math.floor(base.length * (1 - KEPT_SHARE))) || (lost > 0 && lost === base.length)) {
    return `the new data lacks ${lost} of the ${base.length} models it prices for ${current.id}`
  }
  // Deprecated models are left out above (upstream retires them), so one download marking all of a
  // provider's models deprecated, and the next dropping them all, would have been applied in turn.
  const all = current.models.filter((m) => charged(m))
  if (all.length > 0 && all.every((m) => !nextModels.has(m.id))) {
    return `the new data lacks all ${all.length} models it prices for ${current.id}`
  }
  if (base.length > 0 && !next.models.some((m) => !m.deprecated && charged(m))) {
    return `the new data marks every model it prices for ${current.id} deprecated`
  }
  let tried = 0
  for (const m of base) {
    const after = nextModels.get(m.id)
    if (!after) continue
    if (tried++ >= PROBE_CANDIDATES) break
    if (probe(lib, next, after) > 0) break
    // Unpriced by both (a model matched by another name than its id): it tells nothing, try another.
    if (probe(lib, current, m) > 0) return `the new data does not price ${current.id} ${m.id}`
  }
  return null
}

/**
 * Why `next` may not replace `current`, or null when it may. `everyModel`: each model `current`
 * prices must also be in `next` (a cached copy against the bundled data: one older than the
 * bundled data lacks the models added since).
 */
export function refuseReason(lib: PriceLibrary, next: unknown, current: Provider[], everyModel = false): string | null {
  if (!Array.isArray(next) || next.length === 0) return 'expected a non-empty list of providers'
  const byId = new Map<string, Provider>()
  for (const p of next as unknown[]) {
    if (!isObject(p) || typeof p.id !== 'string' || !Array.isArray(p.models)) return 'expected a list of providers with models'
    // The library prices with a provider's first entry; every check here reads one entry per provider.
    if (byId.has(p.id)) return `provider '${p.id}' is listed twice`
    byId.set(p.id, p as unknown as Provider)
  }
  const missing = current.map((p) => p.id).filter((id) => !byId.has(id))
  if (missing.length) return `providers missing from the new data: ${missing.join(', ')}`
  for (const p of byId.values()) {
    const bad = p.models.find((m: unknown) => !isObject(m) || typeof m.id !== 'string' || !usablePrices(m.prices))
    if (bad) return `provider '${p.id}' model '${(bad as { id?: unknown }).id}' has no usable prices`
  }
  for (const p of current) {
    const why = providerRefusal(lib, p, byId.get(p.id)!)
    if (why) return why
  }
  if (everyModel) {
    for (const p of current) {
      const q = byId.get(p.id)!
      const ids = new Set(q.models.map((m) => m.id))
      const known = new Set(p.models.map((m) => m.id))
      // A model renamed since (its old name in a new entry's `match`) is priced by that entry; an entry
      // `current` lists too (an older model's prefix rule) is no such rename: the copy is older.
      const lost = p.models.find((m) => usablePrices(m.prices) && !ids.has(m.id) && !isRenamed(takenBy(lib, q, m.id), known))
      if (lost) return `the data lacks ${p.id} ${lost.id}, which the bundled data prices`
    }
  }
  return null
}

/** Whether `by` (the entry that takes a model's name) is a model `known` does not list: a model renamed. */
function isRenamed(by: string | null, known: Set<string>): boolean {
  return by !== null && !known.has(by)
}

/** The id of the entry of `provider`'s own list (its fallbacks aside) that takes the name `id`, as a call's lookup would; null when none does. */
export function takenBy(lib: PriceLibrary, provider: Provider, id: string): string | null {
  try {
    return lib.calcPrice({ input_tokens: 1, output_tokens: 1 }, id, { provider: { ...provider, fallback_model_providers: undefined } })?.model.id ?? null
  } catch {
    return null
  }
}
