import type { Provider } from '@pydantic/genai-prices'
import type { PriceLibrary } from './library'

/**
 * Whether newer price data may replace the data in use. The library's own check
 * (`setProviderData`) accepts any list of well-formed providers, so a download that lost
 * providers (a partial mirror, a generator bug) or whose models changed format (a renamed
 * `prices` key) would make every model it no longer prices cost $0. Nothing here is a
 * hand-written price table: what must stay priced is taken from the data in use.
 */

/** Providers whose models most calls use: a few of their priced models must stay priced. */
const REFERENCE_PROVIDERS = ['openai', 'anthropic', 'google', 'mistral', 'deepseek', 'aws', 'azure']
const REFERENCE_PER_PROVIDER = 3
const PROBE = { input_tokens: 1_000_000, output_tokens: 1_000_000 }

type Model = Provider['models'][number]

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** One price table: every value a number or tiered prices ({base, tiers}); empty for a free model. */
function usableTable(t: unknown): boolean {
  if (!isObject(t)) return false
  return Object.values(t)
    .filter((v) => v !== undefined && v !== null)
    .every((v) => (typeof v === 'number' && Number.isFinite(v)) || (isObject(v) && typeof v.base === 'number' && Array.isArray(v.tiers)))
}

/** A model's `prices`: one table, or a non-empty list of conditional `{prices}` tables. */
export function usablePrices(prices: unknown): boolean {
  if (Array.isArray(prices)) return prices.length > 0 && prices.every((c) => isObject(c) && usableTable(c.prices))
  return usableTable(prices)
}

/** What `provider`'s data charges for a million input and output tokens of `model` now; 0 when it cannot price it. */
function probe(lib: PriceLibrary, provider: Provider, model: string): number {
  try {
    return lib.calcPrice(PROBE, model, { provider })?.total_price ?? 0
  } catch {
    return 0
  }
}

/** A few models of each reference provider that the data in use prices above zero. */
function referenceModels(lib: PriceLibrary, current: Provider[]): { provider: string; model: string }[] {
  const refs: { provider: string; model: string }[] = []
  for (const p of current) {
    if (!REFERENCE_PROVIDERS.includes(p.id)) continue
    // The first few it prices, not all of them: each probe is a price lookup (this runs on the
    // main thread when the cache loads, on the first call's way).
    let found = 0
    for (const m of p.models as Model[]) {
      if (found >= REFERENCE_PER_PROVIDER) break
      if (m.deprecated || !(probe(lib, p, m.id) > 0)) continue
      refs.push({ provider: p.id, model: m.id })
      found++
    }
  }
  return refs
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
    byId.set(p.id, p as unknown as Provider)
  }
  const missing = current.map((p) => p.id).filter((id) => !byId.has(id))
  if (missing.length) return `providers missing from the new data: ${missing.join(', ')}`
  for (const p of byId.values()) {
    const bad = p.models.find((m: unknown) => !isObject(m) || typeof m.id !== 'string' || !usablePrices(m.prices))
    if (bad) return `provider '${p.id}' model '${(bad as { id?: unknown }).id}' has no usable prices`
  }
  for (const { provider, model } of referenceModels(lib, current)) {
    if (!(probe(lib, byId.get(provider)!, model) > 0)) return `the new data does not price ${provider} ${model}`
  }
  if (everyModel) {
    for (const p of current) {
      const ids = new Set(byId.get(p.id)!.models.map((m) => m.id))
      const lost = p.models.find((m) => usablePrices(m.prices) && !ids.has(m.id))
      if (lost) return `the data lacks ${p.id} ${lost.id}, which the bundled data prices`
    }
  }
  return null
}
