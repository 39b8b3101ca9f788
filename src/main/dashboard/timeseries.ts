import type { Range, Timeseries, TimeseriesPoint } from '../../shared/api'
import type { DashDeps } from './deps'
import { FIVE_MIN, HOUR } from './rollup/schema'
import { andTenant, MONEY, REQUESTS_ONLY, total } from './sql'
import { unpricedByBucket } from './unpriced-counts'
import { BUCKET_SECONDS, rangeWindow, splitWindow, type Window } from './window'

interface Part {
  t: number
  cost_usd: number
  requests: number
  input_tokens: number
  output_tokens: number
}

/**
 * Contiguous zero-filled buckets, oldest first; the first one counts only calls inside the window,
 * the newest one (now's) also the calls stamped after now (./window.ts AFTER_ALL).
 */
export async function timeseries(d: DashDeps, range: Range, tenant: string | null, now: number): Promise<Timeseries> {
  const size = BUCKET_SECONDS[range] * 1000
  const w = rangeWindow(range, now)
  const first = Math.floor(w.start / size) * size
  const last = Math.floor(now / size) * size
  const points: TimeseriesPoint[] = []
  for (let t = first; t <= last; t += size) {
    points.push({ t: new Date(t).toISOString(), cost_usd: 0, requests: 0, input_tokens: 0, output_tokens: 0, unpriced_requests: 0 })
  }
  const addParts = (parts: Part[]) => {
    for (const p of parts) {
      const pt = points[Math.min(Math.floor((p.t - first) / size), points.length - 1)]
      if (!pt) continue
      pt.cost_usd += p.cost_usd
      pt.requests += p.requests
      pt.input_tokens += p.input_tokens
      pt.output_tokens += p.output_tokens
    }
  }
  // Minute buckets (30m, 1h) read calls directly; 5- and 15-minute buckets dash_5m; longer ones dash_hour.
  const grain = size >= HOUR ? HOUR : size >= FIVE_MIN ? FIVE_MIN : null
  const { rolled, raw } = grain ? splitWindow(w, grain) : { rolled: null, raw: [w] }
  const args = (x: Window) => ({ start: x.start, end: x.end, tenant })
  if (rolled) {
    const table = grain === HOUR ? 'dash_hour' : 'dash_5m'
    const sql = `SELECT bucket AS t, ${total('cost_usd')} AS cost_usd, ${total('requests')} AS requests,
        ${total('input_tokens')} AS input_tokens, ${total('output_tokens')} AS output_tokens
      FROM ${table} WHERE bucket >= @start AND bucket < @end${andTenant(tenant)} GROUP BY bucket`
    addParts(await d.q.all<Part>(sql, args(rolled)))
  }
  for (const r of raw) {
    const sql = `SELECT ts AS t, ${MONEY} AS cost_usd, 1 AS requests, input_tokens, output_tokens
      FROM calls WHERE ts >= @start AND ts < @end${REQUESTS_ONLY}${andTenant(tenant)}`
    addParts(await d.q.all<Part>(sql, args(r)))
  }
  // Calls of no known price, counted as $0 in cost_usd: read from the calls (./unpriced-counts.ts),
  // by bucket of the same size; one stamped after now is the newest bucket's, as above.
  for (const [t, n] of await unpricedByBucket(d.q, w, size, tenant)) {
    const pt = points[Math.max(0, Math.min(Math.floor((t - first) / size), points.length - 1))]
    if (pt) pt.unpriced_requests += n
  }
  return { range, bucket_seconds: size / 1000, points }
}
