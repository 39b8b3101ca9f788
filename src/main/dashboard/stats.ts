import type { Range, Stats } from '../../shared/api'
import type { DashDeps } from './deps'
import { BINS, binOf, decodeInto, exactPercentile, histogramPercentile } from './histogram'
import { TIERS } from './rollup/schema'
import { andTenant } from './sql'
import { windowTotals } from './totals'
import { rangeWindow, splitTiers, type Window } from './window'

/** Up to this many calls in the window, percentiles are exact; above, read from the daily and hourly histograms (within 1%). */
export const EXACT_PERCENTILE_MAX = 10_000

export function stats(d: DashDeps, range: Range, tenant: string | null, now: number): Stats {
  const w = rangeWindow(range, now)
  const t = windowTotals(d.q, w, tenant)
  const n = t.requests
  let p50 = 0
  let p95 = 0
  const args = (x: Window) => ({ start: x.start, end: x.end, tenant })
  const rawLatencies = (x: Window) =>
    d.q
      .get(`SELECT latency_ms FROM calls WHERE ts >= @start AND ts < @end${andTenant(tenant)}`)
      .pluck()
      .all(args(x)) as number[]
  if (n > 0 && n <= EXACT_PERCENTILE_MAX) {
    const sorted = Float64Array.from(rawLatencies(w)).sort()
    p50 = exactPercentile(sorted, 0.5)
    p95 = exactPercentile(sorted, 0.95)
  } else if (n > 0) {
    const h = new Float64Array(BINS)
    const { rolled, raw } = splitTiers(w, TIERS)
    for (const { tier, window } of rolled) {
      const blobs = d.q
        .get(`SELECT latency_hist FROM ${tier.totals} WHERE bucket >= @start AND bucket < @end${andTenant(tenant)}`)
        .pluck()
        .all(args(window)) as Buffer[]
      for (const b of blobs) decodeInto(b, h)
    }
    for (const r of raw) {
      for (const ms of rawLatencies(r)) {
        h[binOf(ms)]++
      }
    }
    p50 = histogramPercentile(h, n, 0.5)
    p95 = histogramPercentile(h, n, 0.95)
  }
  return {
    total_requests: n,
    errors_429: t.errors_429,
    errors_5xx: t.errors_5xx,
    error_rate: n > 0 ? t.failed / n : 0,
    avg_latency_ms: n > 0 ? t.latency_ms / n : 0,
    p50_latency_ms: p50,
    p95_latency_ms: p95,
    avg_cost_per_request_usd: n > 0 ? t.cost_usd / n : 0,
  }
}
