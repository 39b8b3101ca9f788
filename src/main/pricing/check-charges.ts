import { setImmediate as nextTurn } from 'node:timers/promises'
import type { Provider } from '@pydantic/genai-prices'
import { charged } from './check-data'
import type { PriceLibrary } from './library'
import { pricesEveryKind } from './unknown-kinds'

/**
 * Whether newer price data still charges for every model the data in use charges for, looked
 * up model by model as a call's price is. ./check-data.ts checks the data's shape and probes a
 * few models per provider; that lets through data broken in any model but the probed ones: an
 * empty price table (`prices: {}`, which reads as a free model) records its calls priced at $0,
 * and a `match` rule the library cannot apply (missing, an invalid regex) makes its lookup throw
 * for every model listed after it, so their calls go unpriced at $0.
 *
 * Each model's id is looked up through its provider's whole model list, as a call's is: every
 * `match` rule before the model's own is tried, so a broken rule anywhere before it is found,
 * and so is an earlier model that now catches its name with a free table. The library copies
 * the provider's list on every such lookup, so this costs the square of a provider's size:
 * 0.3-1 s on the bundled data (openrouter's 700 models most of it), too much for every cache
 * load on the first call's way. It runs on downloads (daily, in the background) and once on a
 * cached copy kept before this check existed, in slices that let calls through in between.
 */

const PROBE = { input_tokens: 1_000_000, output_tokens: 1_000_000 }
/** Longest run of lookups before calls waiting on the event loop go on. */
export const SLICE_MS = 10

/** What a lookup charges for a million input and output tokens: each side, and in all; and the model whose table it found. */
interface Charge {
  input: number
  output: number
  total: number
  model: string | null
}

/** What `provider`'s data charges for a million input and output tokens of model `id` (0s: nothing), or what the library threw. */
function lookup(lib: PriceLibrary, provider: Provider, id: string): Charge | Error {
  try {
    const r = lib.calcPrice(PROBE, id, { provider })
    return { input: r?.input_price ?? 0, output: r?.output_price ?? 0, total: r?.total_price ?? 0, model: r?.model.id ?? null }
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err))
  }
}

/**
 * What `now` no longer charges for that `was` did: the whole model, or one side of it (a price
 * key renamed in every table of a provider leaves the other side priced, so the model's total
 * alone would pass); null when it charges for all it did.
 */
function lostCharge(was: Charge, now: Charge): 'all' | 'input' | 'output' | null {
  if (!(now.total > 0)) return 'all'
  if (was.input > 0 && !(now.input > 0)) return 'input'
  if (was.output > 0 && !(now.output > 0)) return 'output'
  return null
}

/**
 * Most models of one provider the new data may make free at once: a provider does make a model
 * free (Cerebras' qwen-3-coder-480b, Google's Gemma), and refusing the whole download for it
 * would keep every other price stale, and a new model unpriced, from then on. More than this at
 * once is data broken, not a price change.
 */
export const MAX_MADE_FREE = 2

/**
 * A model's price for a million input and output tokens may move by this factor at most, up or
 * down, in more than MAX_MADE_FREE of one provider's models at once. Providers cut a model's price
 * by 2-10x at a time; data whose prices moved a hundredfold or more across a provider is broken
 * (per-token or per-thousand prices written under the per-million keys: every call recorded at a
 * millionth of its cost, no budget ever reached), or hostile.
 */
export const MAX_PRICE_MOVE = 100

/** What `unchargedReason` found: why `next` is refused (or null), and the models it makes free if it is not. */
export interface ChargeCheck {
  refused: string | null
  /** `provider model` of each model the data in use charges for and `next` prices at $0 (`provider model's input` where one side only), when accepted. */
  madeFree: string[]
  /** `provider model` of each model the data in use charges for that `next` leaves unpriced (an empty table it does not say is free, or one side's price gone: ./unknown-kinds.ts; `provider model's input` where one side only), when accepted. */
  leftUnpriced: string[]
  /** `provider model as other` of each model `next` prices with another model's table (an earlier entry's `match` now takes its name), when accepted. */
  pricedAs: string[]
  /** `provider model (was → now)` of each model whose price `next` moves by MAX_PRICE_MOVE or more, when accepted. */
  moved: string[]
}

/**
 * Why `next` may not replace `current`, or null: a model both list that `current` charges for
 * (deprecated ones aside) and `next` cannot look up, or more than MAX_MADE_FREE of one
 * provider's such models that `next` no longer charges for, in all or on the input or output
 * side it charged for. `next` has passed `refuseReason`
 * (every provider of `current` is in it, with well-formed models).
 */
export async function unchargedReason(lib: PriceLibrary, next: Provider[], current: Provider[]): Promise<ChargeCheck> {
  const byId = new Map(next.map((p) => [p.id, p]))
  const madeFree: string[] = []
  const leftUnpriced: string[] = []
  const pricedAs: string[] = []
  const moved: string[] = []
  let sliceStart = performance.now()
  const breathe = async () => {
    if (performance.now() - sliceStart > SLICE_MS) {
      await nextTurn()
      sliceStart = performance.now()
    }
  }
  for (const p of current) {
    const q = byId.get(p.id)
    if (!q) continue
    const listed = new Set(q.models.map((m) => m.id))
    // Each provider's own list: the library would look a fallback provider up in the data in use, not in `next`.
    const after: Provider = { ...q, fallback_model_providers: undefined }
    const before: Provider = { ...p, fallback_model_providers: undefined }
    const free: string[] = []
    const unpriced = new Set<string>()
    const taken: string[] = []
    const far: string[] = []
    for (const m of p.models) {
      if (m.deprecated || !charged(m) || !listed.has(m.id)) continue
      await breathe()
      const now = lookup(lib, after, m.id)
      if (!(now instanceof Error) && now.input > 0 && now.output > 0 && now.model === m.id) {
        // Its own table in the data in use (one model: no scan of the list).
        const was = lookup(lib, { ...before, models: [m] }, m.id)
        if (!(was instanceof Error) && was.total > 0 && movedFar(was.total, now.total)) far.push(`${m.id} ($${Number(was.total.toPrecision(6))} → $${Number(now.total.toPrecision(6))} per 1M input and output tokens)`)
        continue
      }
      // Not charged under its own id by the data in use either (matched by another name): it tells nothing.
      const was = lookup(lib, before, m.id)
      if (was instanceof Error || !(was.total > 0)) continue
      if (now instanceof Error) {
        return { refused: `the price library cannot look up ${p.id} ${m.id} in the new data (${now.message})`, madeFree: [], leftUnpriced: [], pricedAs: [], moved: [] }
      }
      const lost = lostCharge(was, now)
      if (lost) {
        free.push(lost === 'all' ? m.id : `${m.id}'s ${lost}`)
        // A table the library prices at $0 that the data does not say is free, or without one side's price: its calls are recorded unpriced.
        if (!pricesEveryKind(PROBE, m.id, after, new Date())) unpriced.add(free[free.length - 1])
      }
      // Its name now found by an earlier entry (a `match` too broad): priced at that model's table.
      else if (was.model === m.id && now.model !== m.id) taken.push(`${m.id} as ${now.model}`)
    }
    if (free.length > MAX_MADE_FREE) {
      const shown = free.slice(0, 3).join(', ') + (free.length > 3 ? `, and ${free.length - 3} more` : '')
      return { refused: `the new data no longer charges for ${free.length} ${p.id} models (${shown}); at most ${MAX_MADE_FREE} at once are taken for a price change`, madeFree: [], leftUnpriced: [], pricedAs: [], moved: [] }
    }
    if (taken.length > MAX_MADE_FREE) {
      const shown = taken.slice(0, 3).join(', ') + (taken.length > 3 ? `, and ${taken.length - 3} more` : '')
      return { refused: `the new data prices ${taken.length} ${p.id} models with another model's prices (${shown})`, madeFree: [], leftUnpriced: [], pricedAs: [], moved: [] }
    }
    if (far.length > MAX_MADE_FREE) {
      const shown = far.slice(0, 3).join(', ') + (far.length > 3 ? `, and ${far.length - 3} more` : '')
      return { refused: `the new data moves the price of ${far.length} ${p.id} models ${MAX_PRICE_MOVE} times or more (${shown}); at most ${MAX_MADE_FREE} at once are taken for a price change`, madeFree: [], leftUnpriced: [], pricedAs: [], moved: [] }
    }
    for (const id of free) (unpriced.has(id) ? leftUnpriced : madeFree).push(`${p.id} ${id}`)
    pricedAs.push(...taken.map((t) => `${p.id} ${t}`))
    moved.push(...far.map((f) => `${p.id} ${f}`))
    const unlisted = await lostThroughFallback(lib, p, q, current, byId, breathe)
    if (unlisted) return { refused: unlisted, madeFree: [], leftUnpriced: [], pricedAs: [], moved: [] }
  }
  return { refused: null, madeFree, leftUnpriced, pricedAs, moved }
}

/** Whether a price went from `was` to `now` (both above 0) by MAX_PRICE_MOVE times or more, up or down. */
function movedFar(was: number, now: number): boolean {
  return now >= was * MAX_PRICE_MOVE || now * MAX_PRICE_MOVE <= was
}

/**
 * Why `q` (`p` in the new data) no longer prices a model it priced through a fallback provider
 * (Azure OpenAI's gpt-5.x, through openai's list): a fallback dropped leaves each model of that
 * provider unpriced unless `q` now lists it itself or another of its fallbacks does. None of the
 * checks of the models a provider lists sees it.
 */
async function lostThroughFallback(
  lib: PriceLibrary, p: Provider, q: Provider, current: Provider[], byId: Map<string, Provider>, breathe: () => Promise<void>,
): Promise<string | null> {
  const kept = Array.isArray(q.fallback_model_providers) ? q.fallback_model_providers : []
  for (const f of p.fallback_model_providers ?? []) {
    const from = current.find((c) => c.id === f)
    if (kept.includes(f) || !from) continue
    // Where the library would look for the model in the new data: the provider's own list, then each fallback kept.
    const lists = [q, ...kept.map((id) => byId.get(id)).filter((x) => x !== undefined)].map((x) => ({ ...x, fallback_model_providers: undefined }))
    for (const m of from.models) {
      if (m.deprecated || !charged(m)) continue
      await breathe()
      const priced = lists.some((list) => {
        const c = lookup(lib, list, m.id)
        return !(c instanceof Error) && c.total > 0
      })
      if (priced) continue
      // Not charged under its own id by the data in use either (a model priced per second, per image): it tells nothing.
      const was = lookup(lib, { ...from, fallback_model_providers: undefined }, m.id)
      if (!(was instanceof Error) && was.total > 0) return `the new data no longer prices ${p.id} ${m.id}: ${p.id} lost its fallback to ${f}'s list`
    }
  }
  return null
}
