import type { Range } from '../../shared/api'

export const RANGE_MS: Record<Range, number> = {
  '30m': 30 * 60_000,
  '1h': 3_600_000,
  '6h': 6 * 3_600_000,
  '24h': 24 * 3_600_000,
  '7d': 7 * 86_400_000,
  '30d': 30 * 86_400_000,
}

/** Timeseries bucket per range: 30 to 400 buckets each (see README). */
export const BUCKET_SECONDS: Record<Range, number> = {
  '30m': 60,
  '1h': 60,
  '6h': 300,
  '24h': 900,
  '7d': 3600,
  '30d': 21_600,
}

/** Calls with `start <= ts < end` (ms). */
export interface Window {
  start: number
  end: number
}

/**
 * The end of a range's window: after every call stored. A call stamped ahead of this machine's
 * clock (a team member's clock running fast, an imported log written on such a machine) has been
 * made by now, so it counts in every range ending now (the timeseries' newest bucket): it was left
 * out of them until its time came, while `report`, the summary and the budgets counted it.
 */
export const AFTER_ALL = Number.MAX_SAFE_INTEGER

/** The window of a range: from `range` before `now` on, calls stamped after `now` included. */
export function rangeWindow(range: Range, now: number): Window {
  return { start: now - RANGE_MS[range], end: AFTER_ALL }
}

/**
 * Splits a window for a rollup of grain `grain`: whole grain buckets `[rolled.start, rolled.end)`
 * are read from the rollup, the partial ones at either edge from `calls`.
 */
export function splitWindow(w: Window, grain: number): { rolled: Window | null; raw: Window[] } {
  const a = Math.ceil(w.start / grain) * grain
  const b = Math.floor(w.end / grain) * grain
  if (a >= b) return { rolled: null, raw: w.start < w.end ? [w] : [] }
  const raw: Window[] = []
  if (w.start < a) raw.push({ start: w.start, end: a })
  if (b < w.end) raw.push({ start: b, end: w.end })
  return { rolled: { start: a, end: b }, raw }
}

/**
 * Splits a window over rollups of several grains, coarsest first: whole buckets of the
 * coarsest grain in the middle, whole buckets of the next grain at its edges, and so on; the
 * rest (less than one bucket of the finest grain at each end) is read from `calls`.
 */
export function splitTiers<T extends { grain: number }>(
  w: Window,
  tiers: readonly T[],
): { rolled: { tier: T; window: Window }[]; raw: Window[] } {
  if (tiers.length === 0) return { rolled: [], raw: w.start < w.end ? [w] : [] }
  const [tier, ...finer] = tiers
  const { rolled, raw } = splitWindow(w, tier.grain)
  if (!rolled) return splitTiers(w, finer)
  const out = { rolled: [{ tier, window: rolled }], raw: [] as Window[] }
  for (const r of raw) {
    const sub = splitTiers(r, finer)
    out.rolled.push(...sub.rolled)
    out.raw.push(...sub.raw)
  }
  return out
}
