import { setImmediate as nextTurn } from 'node:timers/promises'
import type { Provider } from '@pydantic/genai-prices'
import { SLICE_MS } from './check-charges'
import { takenBy, usablePrices } from './check-data'
import type { PriceLibrary } from './library'

/**
 * Newer price data never takes away a price the data in use has by leaving its model out. The
 * bundled data has no date a download's Last-Modified could be compared with, so a mirror behind
 * it (or a private copy nobody refreshed) that lacks a provider's newest models, too few to look
 * cut short (./check-data.ts), would leave their calls unpriced from then on; so would a later
 * download that lacks a model an earlier one added (a mirror gone back, a model left out
 * upstream). Each model the bundled data or the data in use prices whose name no
 * entry of `next` takes (in the provider's list or a fallback provider's: a model renamed upstream,
 * its old name in the new entry's `match`, is priced by `next`) keeps its entry in the data in
 * use (the one that takes its name there: a download's renamed entry; the bundled one where the
 * data in use prices it not at all), appended after `next`'s own models.
 */
type Model = Provider['models'][number]

export interface KeptKnown {
  /** `next` with the kept entries appended to their providers' lists. */
  data: Provider[]
  /** `provider model` of each kept entry. */
  kept: string[]
  /** Those of `kept` the bundled data does not price (an earlier download added them). */
  notBundled: string[]
}

export async function keepKnown(lib: PriceLibrary, next: Provider[], inUse: Provider[], bundled: Provider[]): Promise<KeptKnown> {
  const kept: string[] = []
  const notBundled: string[] = []
  const data: Provider[] = []
  // Each lookup copies the provider's list (openrouter's 700 models): a download lacking a few of
  // each provider's models took 50-200 ms at once, on the proxy's event loop. Sliced as ./check-charges.ts is.
  let sliceStart = performance.now()
  for (const p of next) {
    const fromBundle = (bundled.find((b) => b.id === p.id)?.models ?? []).filter((m) => usablePrices(m.prices))
    const inUseModels = inUse.find((c) => c.id === p.id)?.models ?? []
    const bundledIds = new Set(fromBundle.map((m) => m.id))
    // The bundled data's models, then those only the data in use prices (an earlier download's).
    const known = [...fromBundle, ...inUseModels.filter((m) => usablePrices(m.prices) && !bundledIds.has(m.id))]
    const listed = new Set(p.models.map((m) => m.id))
    const current = new Map(inUseModels.map((m) => [m.id, m]))
    const inUseProvider = inUse.find((c) => c.id === p.id)
    // Where the library looks a name up in `next`: the provider's own list, then each of its fallbacks'.
    const lists = [p, ...(p.fallback_model_providers ?? []).map((f) => next.find((q) => q.id === f)).filter((q) => q !== undefined)]
    const added: Provider['models'] = []
    const addedIds = new Set<string>()
    for (const m of known) {
      if (listed.has(m.id)) continue
      if (performance.now() - sliceStart > SLICE_MS) {
        await nextTurn()
        sliceStart = performance.now()
      }
      if (lists.some((list) => takes(lib, list, m.id))) continue
      const entry = inUseEntry(lib, m, current, inUseProvider, listed)
      if (addedIds.has(entry.id)) continue
      addedIds.add(entry.id)
      added.push(entry)
    }
    // In the order the data in use lists them (a name two of them take is priced as it was), those it lacks after.
    const rank = new Map(inUseModels.map((m, i) => [m, i]))
    added.sort((a, b) => (rank.get(a) ?? inUseModels.length) - (rank.get(b) ?? inUseModels.length))
    if (added.length === 0) {
      data.push(p)
      continue
    }
    for (const m of added) {
      kept.push(`${p.id} ${m.id}`)
      if (!bundledIds.has(m.id)) notBundled.push(`${p.id} ${m.id}`)
    }
    data.push({ ...p, models: [...p.models, ...added] })
  }
  return { data, kept, notBundled }
}

/**
 * The entry that prices `m`'s name in the data in use: its own, or, where the data in use lists it
 * under another id (a download renamed it: its new entry takes the old name), that entry, unless
 * `next` lists that id itself; else `m` (the bundled entry).
 */
function inUseEntry(lib: PriceLibrary, m: Model, current: Map<string, Model>, inUse: Provider | undefined, listed: Set<string>): Model {
  const now = current.get(m.id)
  if (now) return usablePrices(now.prices) ? now : m
  const by = inUse ? takenBy(lib, inUse, m.id) : null
  const other = by === null || listed.has(by) ? undefined : current.get(by)
  return other && usablePrices(other.prices) ? other : m
}

/** Whether an entry of `provider`'s own list takes the name `id`. */
function takes(lib: PriceLibrary, provider: Provider, id: string): boolean {
  return takenBy(lib, provider, id) !== null
}

/** `data` without the entries `kept` names: the data as it was downloaded, before keepKnown. */
export function withoutKept(data: Provider[], kept: readonly string[]): Provider[] {
  if (kept.length === 0) return data
  const names = new Set(kept)
  return data.map((p) => (p.models.some((m) => names.has(`${p.id} ${m.id}`)) ? { ...p, models: p.models.filter((m) => !names.has(`${p.id} ${m.id}`)) } : p))
}
