import type { SqlReader } from '../storage/sql'
import { localMidnight, wallInstant } from '../time/zone'
import { type Totals, collect, finish } from './collect'
import { costliestSessions } from './sessions'
import { RANKED_KINDS, type Report, type ReportQuery, type ReportRow } from './types'
import { withUnpriced } from './unpriced'
import { windowTimes } from './window'

export * from './types'

/**
 * A day `YYYY-MM-DD` (local midnight in `tz`) or an ISO time, as ms; `end` moves a day to the
 * next midnight. An ISO time without `Z` or an offset is a wall-clock time in `tz` (never in the
 * machine's zone, which is what `Date.parse` would read it in).
 */
export function parseWhen(s: string, tz: string, end = false): number | null {
  // ISO 8601 and RFC 3339 let the T between day and time, and the Z of UTC, be lowercase.
  s = s.replace(/^(\d{4}-\d{2}-\d{2})t/, '$1T').replace(/z$/, 'Z')
  const d = /^(\d{4})-?(\d{2})-?(\d{2})$/.exec(s)
  if (d) {
    if (!isCalendarDay(d[1], d[2], d[3])) return null
    return localMidnight(Number(d[1]), Number(d[2]), Number(d[3]) + (end ? 1 : 0), tz)
  }
  const iso = /^(\d{4})-(\d{2})-(\d{2})T/.exec(s)
  // Date.parse reads 2026-02-30T… as March 2: a day that does not exist is refused, not rolled over.
  if (!iso || !isCalendarDay(iso[1], iso[2], iso[3])) return null
  if (/(Z|[+-]\d{2}(:?\d{2})?)$/i.test(s)) {
    // ISO 8601 lets an offset of whole hours be written as hours alone (`+05`), which Date.parse refuses.
    const t = Date.parse(s.replace(/(T[\d:.,]+[+-]\d{2})$/, '$1:00'))
    return Number.isFinite(t) ? t : null
  }
  // Read the wall clock as UTC (so the machine's zone plays no part), then place it in `tz`.
  const wall = Date.parse(`${s}Z`)
  return Number.isFinite(wall) ? wallInstant(wall, tz) : null
}

/** True when year, month and day name a day of the calendar (no February 29 of 2026, no April 31). */
function isCalendarDay(year: string, month: string, day: string): boolean {
  const [y, m, d] = [Number(year), Number(month), Number(day)]
  const t = new Date(0)
  // Rolls an impossible day over into the next month (as Date.UTC would, which also reads years 0-99 as 19xx).
  t.setUTCFullYear(y, m - 1, d)
  return t.getUTCFullYear() === y && t.getUTCMonth() === m - 1 && t.getUTCDate() === d
}

/**
 * Spend over a window grouped by period (in the configured zone) or by an attribute (see
 * `collect`). A session, model, agent or project report with a `limit` lists that many of its
 * costliest rows; its totals are of every row. A session report over whole days of the SQLite
 * report rollup finds them without summing every session (`costliestSessions`). Each row and the
 * totals say how many of their calls had no known price (`withUnpriced`), their $0 in `cost_usd`.
 */
export async function buildReport(db: SqlReader, q: ReportQuery, rollupZone: string | null = null): Promise<Report> {
  const limit = RANKED_KINDS.includes(q.kind) ? (q.limit ?? null) : null
  let page: { rows: ReportRow[]; totals: Totals; total_rows: number } | null = null
  if (q.kind === 'session' && limit !== null) page = await costliestSessions(db, q, limit, rollupZone)
  if (!page) {
    const got = await collect(db, q, rollupZone)
    const all = finish(got.rows, q.kind)
    const rows = limit !== null && all.length > limit ? all.slice(0, limit) : all
    page = { rows, totals: got.totals, total_rows: all.length }
  }
  return withUnpriced(db, q, {
    kind: q.kind,
    ...windowTimes(q.since, q.until),
    timezone: q.timezone,
    tenant: q.tenant,
    rows: page.rows,
    total_rows: page.total_rows,
    totals: page.totals,
  })
}
