import type { SqlReader } from '../storage/sql'
import { OPEN, type Totals, collect, finish, splitDays } from './collect'
import type { ReportQuery, ReportRow } from './types'

/**
 * Below this share of the ledger's time, a window's costliest sessions are found by sorting the
 * sessions that end in it; above it, by walking every session from the costliest down until
 * enough lie in the window (about `limit / share` of them when cost does not depend on time).
 */
const NARROW = 0.1

/**
 * Above this many rows, summing every session of the window at once (and cutting the list) is
 * cheaper than looking each candidate up through the session index.
 */
const MOST_CANDIDATES = 1000

/**
 * A session total (`dash_report_session`) some of whose calls still count a request: not one whose
 * only calls were imported ones the proxy's record superseded (../import/supersede.ts), which
 * stays at $0 where a rebuild of the rollup has no row. Such a session costs nothing, so only
 * sessions at $0 (to the last nano-dollar) are looked up in their day and month rows (the session
 * indexes): the others are left as fast as before.
 */
const COUNTS_A_REQUEST = `(abs(cost_usd) >= 1e-9
  OR EXISTS (SELECT 1 FROM dash_report_day d WHERE d.dim = 'session' AND d.key = dash_report_session.session AND d.requests > 0
              AND (dash_report_session.across = 1 OR d.tenant = dash_report_session.tenant))
  OR EXISTS (SELECT 1 FROM dash_report_month m WHERE m.dim = 'session' AND m.key = dash_report_session.session AND m.requests > 0
              AND (dash_report_session.across = 1 OR m.tenant = dash_report_session.tenant)))`

/**
 * The `limit` costliest sessions of a window, from the report rollup's session totals
 * (`dash_report_session`, SQLite), without summing every session of the window:
 * - a session whose calls all lie in the window cost there exactly its total, so the costliest
 *   `limit` of those come from an index (and how many there are, from another);
 * - a session that crosses an end of the window (calls on both sides) may rank anywhere, so
 *   every such session is a candidate too (there are few: those running at that moment);
 * - the candidates are then summed for the window from the day and month rows (the same sums as
 *   the full report: every figure of a row is exact), ranked, and cut to `limit`.
 * Any session left out lies wholly in the window and cost no more than the last listed.
 * Totals are of every call of the window (the period rows); `total_rows` counts every session with
 * calls in it. Null (the caller then sums every session of the window) when `limit` is over
 * `MOST_CANDIDATES`, or when the window has no whole local day of the rollup (its calls are few).
 */
export async function costliestSessions(
  db: SqlReader,
  q: ReportQuery,
  limit: number,
  rollupZone: string | null,
): Promise<{ rows: ReportRow[]; totals: Totals; total_rows: number } | null> {
  if (db.dialect !== 'sqlite' || rollupZone === null || rollupZone !== q.timezone || limit > MOST_CANDIDATES) return null
  if (!splitDays(q.since, q.until, q.timezone).days) return null
  const who = { across: q.tenant === null ? 1 : 0, tenant: q.tenant ?? '' }
  const since = q.since ?? -OPEN
  const until = q.until ?? OPEN

  const insideWhere = `across = @across AND tenant = @tenant AND first_ts >= @since AND last_ts < @until AND ${COUNTS_A_REQUEST}`
  const args = { ...who, since, until, n: limit }
  const inside = await db.all<{ session: string }>(
    (await isNarrow(db, who, since, until))
      ? `SELECT session FROM dash_report_session INDEXED BY dash_report_session_last
          WHERE ${insideWhere} AND last_ts >= @since ORDER BY cost_usd DESC, session LIMIT @n`
      : `SELECT session FROM dash_report_session INDEXED BY dash_report_session_cost
          WHERE ${insideWhere} ORDER BY cost_usd DESC, session LIMIT @n`,
    args,
  )
  const insideCount = (await db.get<{ n: number }>(
    `SELECT count(*) AS n FROM dash_report_session INDEXED BY dash_report_session_last WHERE ${insideWhere} AND last_ts >= @since`,
    args,
  ))!.n
  const candidates = new Set(inside.map((r) => r.session))
  const crossing = new Set<string>()
  for (const edge of [q.since, q.until]) {
    if (edge === null) continue
    const rows = await db.all<{ session: string }>(
      `SELECT session FROM dash_report_session INDEXED BY dash_report_session_last
        WHERE across = @across AND tenant = @tenant AND last_ts >= @edge AND first_ts < @edge`,
      { ...who, edge },
    )
    for (const r of rows) crossing.add(r.session)
  }
  for (const s of crossing) candidates.add(s)
  const ranked = candidates.size ? finish((await collect(db, q, rollupZone, [...candidates])).rows, 'session') : []
  // Every session with calls in the window: those wholly in it, and those crossing an end that have calls in it.
  let total_rows = insideCount
  for (const r of ranked) if (crossing.has(r.key)) total_rows++
  const { totals } = await collect(db, { ...q, kind: 'monthly' }, rollupZone)
  return { rows: ranked.length > limit ? ranked.slice(0, limit) : ranked, totals, total_rows }
}

/** Whether the window holds under `NARROW` of the time between the first and last session's ends. */
async function isNarrow(db: SqlReader, who: { across: number; tenant: string }, since: number, until: number): Promise<boolean> {
  const end = (fn: 'min' | 'max') =>
    db.get<{ t: number | null }>(`SELECT ${fn}(last_ts) AS t FROM dash_report_session WHERE across = @across AND tenant = @tenant`, who)
  const first = (await end('min'))?.t
  const last = (await end('max'))?.t
  if (first == null || last == null || last <= first) return false
  return (Math.min(until, last) - Math.max(since, first)) / (last - first) < NARROW
}
