import { isGroup } from '../dashboard/groups'
import { bucketStartSql, bytewise, countIf, total } from '../dashboard/sql'
import type { SqlReader } from '../storage/sql'
import { REPORT_TIERS, type ReportDim, type ReportTier, reportDim } from '../dashboard/rollup/report'
import { localParts, startOfDay, startOfMonth, startOfNextDay, startOfNextMonth, utcTime } from '../time/zone'
import { type Totals, type TotalsPart, sumTotals } from './totals'
import type { ReportKind, ReportRow } from './types'

export type { Totals } from './totals'

/** What a report sums over: its kind, window, tenant and zone. */
export interface Window {
  kind: ReportKind
  since: number | null
  until: number | null
  tenant: string | null
  timezone: string
}

/** A report row as it is summed: its cost per model too (for `models`). */
export type Acc = ReportRow & { byModel: Map<string, number> }

const pad = (n: number) => String(n).padStart(2, '0')
/** A year as ISO writes it: four digits (`0050`), so period keys sort and read as dates. */
const year = (y: number) => (y < 0 ? '-' + String(-y).padStart(6, '0') : String(y).padStart(4, '0'))
const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/**
 * The start (ms) of a call's quarter hour, the step a report's calls are summed by, in SQL alike
 * on SQLite and PostgreSQL: floored, as `ts / 900000` is not (both truncate toward zero, so
 * a call stamped before 1970 fell in the next quarter hour, 1969-12-31 23:50 on 1970-01-01).
 */
export const QUARTER_HOUR_SQL = bucketStartSql('ts', 900_000)

export const isPeriodic = (kind: ReportKind): kind is 'daily' | 'weekly' | 'monthly' =>
  kind === 'daily' || kind === 'weekly' || kind === 'monthly'

/** The period key of a local time: day, ISO week (its Monday) or month. */
export function periodKey(ts: number, kind: 'daily' | 'weekly' | 'monthly', tz: string): string {
  const p = localParts(ts, tz)
  if (kind === 'monthly') return `${year(p.year)}-${pad(p.month)}`
  if (kind === 'daily') return `${year(p.year)}-${pad(p.month)}-${pad(p.day)}`
  const d = new Date(utcTime(p.year, p.month - 1, p.day))
  d.setUTCDate(d.getUTCDate() - ((d.getUTCDay() + 6) % 7))
  return `${year(d.getUTCFullYear())}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`
}

const SUMS = `count(*) AS requests, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
  sum(cache_read_tokens) AS cache_read_tokens, sum(cache_write_tokens) AS cache_write_tokens,
  ${total('cost_usd')} AS cost_usd, ${countIf("source = 'import'")} AS imported`

const ROLLUP_SUMS = `sum(requests) AS requests, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
  sum(cache_read_tokens) AS cache_read_tokens, sum(cache_write_tokens) AS cache_write_tokens,
  ${total('cost_usd')} AS cost_usd, sum(imported) AS imported`

/** An open end of a window: of `splitDays`'s whole days, and as the session totals' times compare with it. */
export const OPEN = Number.MAX_SAFE_INTEGER

/**
 * Splits a report window into whole local days `[a, b)` (read from the report rollup) and the
 * parts of days at its edges (read from calls). An open end is open on both.
 */
export function splitDays(
  since: number | null,
  until: number | null,
  tz: string,
): { days: { a: number; b: number } | null; raw: { since: number | null; until: number | null }[] } {
  const a = since === null ? -OPEN : startOfDay(since, tz) === since ? since : startOfNextDay(since, tz)
  const b = until === null ? OPEN : startOfDay(until, tz)
  if (a >= b) return { days: null, raw: [{ since, until }] }
  const raw: { since: number | null; until: number | null }[] = []
  if (since !== null && since < a) raw.push({ since, until: a })
  if (until !== null && b < until) raw.push({ since: b, until })
  return { days: { a, b }, raw }
}

/**
 * Splits whole local days `[a, b)` (from `splitDays`; an open end is -OPEN or OPEN) into the
 * whole local months among them (read from the report rollup's month rows) and the days at
 * their edges (read from its day rows).
 */
export function splitMonths(a: number, b: number, tz: string): { tier: ReportTier; a: number; b: number }[] {
  const m1 = a === -OPEN || startOfMonth(a, tz) === a ? a : startOfNextMonth(a, tz)
  const m2 = b === OPEN ? b : startOfMonth(b, tz)
  if (m1 >= m2) return [{ tier: REPORT_TIERS.day, a, b }]
  const parts: { tier: ReportTier; a: number; b: number }[] = [{ tier: REPORT_TIERS.month, a: m1, b: m2 }]
  if (a < m1) parts.push({ tier: REPORT_TIERS.day, a, b: m1 })
  if (m2 < b) parts.push({ tier: REPORT_TIERS.day, a: m2, b })
  return parts
}

/**
 * Sums a report's rows over its window, by period (in the configured zone) or by attribute.
 * Periods are summed from quarter-hours in SQL (every zone's offset is a whole number of them)
 * and assigned to local days here, so a day is the zone's day even across DST changes. Whole
 * local days come from the report rollup when it is built in the report's zone (`rollupZone`,
 * the zone the SQLite ledger's `dash_report_day` and `dash_report_month` are kept in, whole
 * months from the months for every kind but daily and weekly, and the rows across tenants when
 * the report is of every tenant; so days whose raw calls retention pruned still count), the rest
 * from calls. Without it (PostgreSQL, or another zone) every day is summed from calls.
 * `sessions` (a session report, SQLite only) sums only those sessions, through the rollup's
 * session indexes (and then has no totals).
 * The totals are of the same parts for every kind: the whole days' rows per day and model (what
 * a daily report reads; any other kind reads them too) and one sum of the other calls per part of
 * the window read from calls, added by `sumTotals`, so every kind's totals of a window agree to the
 * last digit (summing each kind's own rows, they did not).
 */
export async function collect(
  db: SqlReader,
  q: Window,
  rollupZone: string | null,
  sessions: readonly string[] | null = null,
): Promise<{ rows: Map<string, Acc>; totals: Totals }> {
  const rows = new Map<string, Acc>()
  const row = (key: string) => {
    let r = rows.get(key)
    if (!r) {
      r = { key, requests: 0, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: 0, imported: 0, unpriced_requests: 0, models: [], byModel: new Map() }
      rows.set(key, r)
    }
    return r
  }
  const add = (r: Acc, x: any) => {
    r.requests += x.requests
    r.input_tokens += x.input_tokens ?? 0
    r.output_tokens += x.output_tokens ?? 0
    r.cache_read_tokens += x.cache_read_tokens ?? 0
    r.cache_write_tokens += x.cache_write_tokens ?? 0
    r.cost_usd += x.cost_usd
    r.imported += x.imported ?? 0
    if (x.model) r.byModel.set(x.model, (r.byModel.get(x.model) ?? 0) + x.cost_usd)
  }
  /** One summed group: into its period's row (`period`), else into its attribute's row. */
  const addRow = (x: any, period: string | null) => {
    if (period !== null) return add(row(period), x)
    const r = row(q.kind === 'model' ? `${x.key}\0${x.provider}` : x.key)
    add(r, x)
    if (q.kind === 'model') {
      r.key = x.key
      r.provider = x.provider
    }
    if (q.kind === 'session') {
      // The greatest of the session's calls (one agent and project for nearly every session),
      // whichever order the parts are read in.
      if (x.agent && !(r.agent && r.agent >= x.agent)) r.agent = x.agent
      if (x.project && !(r.project && r.project >= x.project)) r.project = x.project
    }
  }
  const periodic = isPeriodic(q.kind)
  const only = sessions !== null && q.kind === 'session'
  const parts: TotalsPart[] = []
  // The kinds whose own reads of the day rows (per day and model) are the totals' parts of the whole days.
  const byDays = q.kind === 'daily' || q.kind === 'weekly'
  const keysArg = only ? JSON.stringify(sessions) : null
  const { days, raw } = rollupZone === q.timezone ? splitDays(q.since, q.until, q.timezone) : { days: null, raw: [{ since: q.since, until: q.until }] }
  if (days) {
    // Whole local days from the report rollup (built in this zone); for every kind but daily and
    // weekly, the whole local months among them from its month rows.
    const dim = reportDim(periodic || q.kind === 'model' ? '' : (q.kind as ReportDim), q.tenant)
    const keys = new Map<number, string>()
    const keyOf = (period: number) => {
      let k = keys.get(period)
      if (k === undefined) keys.set(period, (k = periodKey(period, q.kind as 'daily', q.timezone)))
      return k
    }
    const tiers = byDays ? [{ tier: REPORT_TIERS.day, ...days }] : splitMonths(days.a, days.b, q.timezone)
    for (const { tier, a, b } of tiers) {
      const col = tier.col
      // Some sessions: through the session index (partial, on dim = 'session'), not the whole
      // window's session rows in key order, which the planner would otherwise pick.
      const where = only ? [`dim = 'session'`, 'key IN (SELECT value FROM json_each(@keys))'] : ['dim = @dim']
      where.push(`${col} >= @a`, `${col} < @b`)
      if (q.tenant !== null) where.push('tenant = @tenant')
      const from = `FROM ${tier.table}${only ? ` INDEXED BY ${tier.table}_session` : ''} WHERE ${where.join(' AND ')}`
      const sql = periodic
        ? `SELECT ${col} AS key, model, ${ROLLUP_SUMS} ${from} GROUP BY ${col}, model`
        : q.kind === 'model'
          ? `SELECT model AS key, model, provider, ${ROLLUP_SUMS} ${from} GROUP BY model, provider`
          : `SELECT key, model${q.kind === 'session' ? ', max(agent) AS agent, max(project) AS project' : ''}, ${ROLLUP_SUMS} ${from} GROUP BY key, model`
      for (const x of await db.all<any>(sql, { dim, a, b, tenant: q.tenant, keys: keysArg })) {
        addRow(x, periodic ? keyOf(x.key) : null)
        if (byDays) parts.push(x)
      }
    }
    // The totals' parts of the whole days, as a daily report of the window reads them.
    if (!byDays && !only) parts.push(...(await dayParts(db, reportDim('', q.tenant), days.a, days.b, q.tenant)))
  }
  for (const part of raw) {
    // (Not an imported call the proxy's record superseded: no request, $0.)
    const where = ['superseded_by IS NULL']
    if (part.since !== null) where.push('ts >= @since')
    if (part.until !== null) where.push('ts < @until')
    if (q.tenant !== null) where.push('tenant = @tenant')
    if (only) where.push('session IN (SELECT value FROM json_each(@keys))')
    const w = where.join(' AND ')
    const args = { since: part.since, until: part.until, tenant: q.tenant, ...(only ? { keys: keysArg } : {}) }
    if (periodic) {
      const sql = `SELECT ${QUARTER_HOUR_SQL} AS qh, model, ${SUMS} FROM calls WHERE ${w} GROUP BY qh, model`
      for (const x of await db.all<any>(sql, args)) addRow(x, periodKey(Number(x.qh), q.kind as 'daily', q.timezone))
    } else {
      const col = q.kind
      const extra =
        q.kind === 'model' ? ', provider' : q.kind === 'session' ? `, max(${bytewise(db, 'agent')}) AS agent, max(${bytewise(db, 'project')}) AS project` : ''
      const group = q.kind === 'model' ? 'model, provider' : `${col}, model`
      const sql = `SELECT ${col} AS key, model${extra}, ${SUMS} FROM calls WHERE ${w} GROUP BY ${group}`
      for (const x of await db.all<any>(sql, args)) addRow(x, null)
    }
    // The totals' part of these calls: one sum, the same whatever the kind groups them by (a
    // scan without grouping: a fraction of the grouped one's time).
    if (!only) parts.push(...(await db.all<TotalsPart>(`SELECT ${SUMS} FROM calls WHERE ${w}`, args)))
  }
  return { rows, totals: sumTotals(parts) }
}

/** The whole days' parts of the totals: the day rows of `[a, b)` per day and model (the very query of a daily report). */
function dayParts(db: SqlReader, dim: string, a: number, b: number, tenant: string | null): Promise<TotalsPart[]> {
  const { table, col } = REPORT_TIERS.day
  const where = ['dim = @dim', `${col} >= @a`, `${col} < @b`]
  if (tenant !== null) where.push('tenant = @tenant')
  const sql = `SELECT ${col} AS key, model, ${ROLLUP_SUMS} FROM ${table} WHERE ${where.join(' AND ')} GROUP BY ${col}, model`
  return db.all<TotalsPart>(sql, { dim, a, b, tenant, keys: null })
}

/** The summed rows as a report lists them: periods in order, attributes costliest first. */
export function finish(rows: Map<string, Acc>, kind: ReportKind): ReportRow[] {
  const periodic = isPeriodic(kind)
  // A period, session, model, agent or project with nothing in it is none: its only calls were
  // imported ones the proxy's record superseded, whose rollup rows stay at 0 requests and $0
  // where a rebuild of the rollup has none (../dashboard/groups.ts).
  return [...rows.values()]
    .filter(isGroup)
    .map(({ byModel, ...r }) => ({ ...r, models: [...byModel].sort((a, b) => b[1] - a[1] || byText(a[0], b[0])).map(([m]) => m) }))
    .sort((a, b) => (periodic ? byText(a.key, b.key) : b.cost_usd - a.cost_usd || byText(a.key, b.key) || byText(a.provider ?? '', b.provider ?? '')))
}

