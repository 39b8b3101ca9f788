import type { Range, Stats } from '../../shared/api'
import type { DashDeps } from './deps'
import { billed, planCallsIn } from './plan-counts'
import { BINS, binOf, decodeInto, exactPercentile, histogramPercentile } from './histogram'
import { TIERS } from './rollup/schema'
import { andTenant } from './sql'
import { windowTotals } from './totals'
import { rangeWindow, splitTiers, type Window } from './window'

/** Up to this many calls in the window, percentiles are exact; above, read from the daily and hourly histograms (within 1%). */
export const EXACT_PERCENTILE_MAX = 10_000

export async function stats(d: DashDeps, range: Range, tenant: string | null, now: number): Promise<Stats> {
  const w = rangeWindow(range, now)
  const t = await windowTotals(d.q, w, tenant)
  const n = t.requests
  let p50 = 0
  let p95 = 0
  /**
   * The calls that have a latency: not those recorded without one (0: imported from the agents'
   * logs, a Batch API's requests read from its results), which the rollups' histograms leave out too.
   */
  let timed = 0
  const args = (x: Window) => ({ start: x.start, end: x.end, tenant })
  const rawLatencies = async (x: Window) =>
    (await d.q.all<{ latency_ms: number }>(`SELECT latency_ms FROM calls WHERE ts >= @start AND ts < @end AND latency_ms > 0${andTenant(tenant)}`, args(x))).map(
      (r) => r.latency_ms,
    )
  if (n > 0 && n <= EXACT_PERCENTILE_MAX) {
    const sorted = Float64Array.from(await rawLatencies(w)).sort()
    timed = sorted.length
    p50 = exactPercentile(sorted, 0.5)
    p95 = exactPercentile(sorted, 0.95)
  } else if (n > 0) {
    const h = new Float64Array(BINS)
    const { rolled, raw } = splitTiers(w, TIERS)
    for (const { tier, window } of rolled) {
      const rows = await d.q.all<{ latency_hist: Buffer }>(
        `SELECT latency_hist FROM ${tier.totals} WHERE bucket >= @start AND bucket < @end${andTenant(tenant)}`,
        args(window),
      )
      for (const r of rows) decodeInto(r.latency_hist, h)
    }
    for (const r of raw) {
      for (const ms of await rawLatencies(r)) {
        h[binOf(ms)]++
      }
    }
    for (let b = 0; b < BINS; b++) timed += h[b]
    p50 = histogramPercentile(h, timed, 0.5)
    p95 = histogramPercentile(h, timed, 0.95)
  }
  // The average cost is over the calls billed per token: a plan's call costs no money (./plan-counts.ts).
  const billedCalls = n > 0 ? billed(n, await planCallsIn(d.q, w, tenant)) : 0
  return {
    total_requests: n,
    errors_429: t.errors_429,
    errors_5xx: t.errors_5xx,
    error_rate: n > 0 ? t.failed / n : 0,
    avg_latency_ms: timed > 0 ? t.latency_ms / timed : 0,
    p50_latency_ms: p50,
    p95_latency_ms: p95,
    billed_requests: billedCalls,
    avg_cost_per_request_usd: billedCalls > 0 ? t.cost_usd / billedCalls : 0,
  }
}
