import { bytewise } from '../dashboard/sql'
import type { SqlReader } from '../storage/sql'
import { localMidnight, localParts } from '../time/zone'

/** The report kinds of `burnrate report` and `GET /api/dashboard/report`. */
export const REPORT_KINDS = ['daily', 'weekly', 'monthly', 'session', 'model', 'agent', 'project'] as const
export type ReportKind = (typeof REPORT_KINDS)[number]

export interface ReportRow {
  /** `2026-11-20` (daily; weekly: the Monday), `2026-11` (monthly), or the session, model, agent or project. */
  key: string
  requests: number
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  cost_usd: number
  /** Calls imported from the agents' logs (the rest came through the proxy). */
  imported: number
  /** Models used, costliest first. */
  models: string[]
  /** model: its provider; session: its agent and project. */
  provider?: string
  agent?: string
  project?: string
}

export interface Report {
  kind: ReportKind
  /** The window, ISO times; `until` is exclusive. Null when open. */
  since: string | null
  until: string | null
  timezone: string
  tenant: string | null
  rows: ReportRow[]
  totals: Omit<ReportRow, 'key' | 'models' | 'provider' | 'agent' | 'project'>
}

export interface ReportQuery {
  kind: ReportKind
  since: number | null
  until: number | null
  tenant: string | null
  timezone: string
}

/** A day `YYYY-MM-DD` (local midnight in `tz`) or an ISO time, as ms; `end` moves a day to the next midnight. */
export function parseWhen(s: string, tz: string, end = false): number | null {
  const d = /^(\d{4})-?(\d{2})-?(\d{2})$/.exec(s)
  if (d) return localMidnight(Number(d[1]), Number(d[2]), Number(d[3]) + (end ? 1 : 0), tz)
  const t = Date.parse(s)
  return Number.isFinite(t) && /^\d{4}-\d{2}-\d{2}T/.test(s) ? t : null
}

const pad = (n: number) => String(n).padStart(2, '0')
const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** The period key of a local time: day, ISO week (its Monday) or month. */
function periodKey(ts: number, kind: 'daily' | 'weekly' | 'monthly', tz: string): string {
  const p = localParts(ts, tz)
  if (kind === 'monthly') return `${p.year}-${pad(p.month)}`
  if (kind === 'daily') return `${p.year}-${pad(p.month)}-${pad(p.day)}`
  const d = new Date(Date.UTC(p.year, p.month - 1, p.day))
  d.setUTCDate(d.getUTCDate() - ((d.getUTCDay() + 6) % 7))
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`
}

const SUMS = `count(*) AS requests, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
  sum(cache_read_tokens) AS cache_read_tokens, sum(cache_write_tokens) AS cache_write_tokens,
  coalesce(sum(cost_usd), 0) AS cost_usd, sum(CASE WHEN source = 'import' THEN 1 ELSE 0 END) AS imported`

/**
 * Spend over a window grouped by period (in the configured zone) or by an attribute. Periods
 * are summed from quarter-hours in SQL (every zone's offset is a whole number of them) and
 * assigned to local days here, so a day is the zone's day even across DST changes.
 */
export async function buildReport(db: SqlReader, q: ReportQuery): Promise<Report> {
  const where = ['1 = 1']
  if (q.since !== null) where.push('ts >= @since')
  if (q.until !== null) where.push('ts < @until')
  if (q.tenant !== null) where.push('tenant = @tenant')
  const args = { since: q.since, until: q.until, tenant: q.tenant }
  const rows = new Map<string, ReportRow & { byModel: Map<string, number> }>()
  const row = (key: string) => {
    let r = rows.get(key)
    if (!r) {
      r = { key, requests: 0, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: 0, imported: 0, models: [], byModel: new Map() }
      rows.set(key, r)
    }
    return r
  }
  const add = (r: ReportRow & { byModel: Map<string, number> }, x: any) => {
    r.requests += x.requests
    r.input_tokens += x.input_tokens ?? 0
    r.output_tokens += x.output_tokens ?? 0
    r.cache_read_tokens += x.cache_read_tokens ?? 0
    r.cache_write_tokens += x.cache_write_tokens ?? 0
    r.cost_usd += x.cost_usd
    r.imported += x.imported ?? 0
    if (x.model) r.byModel.set(x.model, (r.byModel.get(x.model) ?? 0) + x.cost_usd)
  }
  const w = where.join(' AND ')
  if (q.kind === 'daily' || q.kind === 'weekly' || q.kind === 'monthly') {
    const sql = `SELECT ts / 900000 AS qh, model, ${SUMS} FROM calls WHERE ${w} GROUP BY qh, model`
    for (const x of await db.all<any>(sql, args)) add(row(periodKey(x.qh * 900_000, q.kind, q.timezone)), x)
  } else {
    const col = q.kind
    const extra =
      q.kind === 'model' ? ', provider' : q.kind === 'session' ? `, max(${bytewise(db, 'agent')}) AS agent, max(${bytewise(db, 'project')}) AS project` : ''
    const group = q.kind === 'model' ? 'model, provider' : `${col}, model`
    const sql = `SELECT ${col} AS key, model${extra}, ${SUMS} FROM calls WHERE ${w} GROUP BY ${group}`
    for (const x of await db.all<any>(sql, args)) {
      const r = row(q.kind === 'model' ? `${x.key}\0${x.provider}` : x.key)
      add(r, x)
      if (q.kind === 'model') {
        r.key = x.key
        r.provider = x.provider
      }
      if (q.kind === 'session') {
        // The session's greatest agent and project over its models' groups, whatever order they come in.
        if (r.agent === undefined || x.agent > r.agent) r.agent = x.agent
        if (r.project === undefined || x.project > r.project) r.project = x.project
      }
    }
  }
  const periodic = q.kind === 'daily' || q.kind === 'weekly' || q.kind === 'monthly'
  const out = [...rows.values()]
    // Ties in name order, so the answer does not depend on the order the store returned the groups in.
    .map(({ byModel, ...r }) => ({ ...r, models: [...byModel].sort((a, b) => b[1] - a[1] || byText(a[0], b[0])).map(([m]) => m) }))
    .sort((a, b) => (periodic ? byText(a.key, b.key) : b.cost_usd - a.cost_usd || byText(a.key, b.key) || byText(a.provider ?? '', b.provider ?? '')))
  const totals = { requests: 0, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: 0, imported: 0 }
  for (const r of out) for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += r[k]
  return {
    kind: q.kind,
    since: q.since === null ? null : new Date(q.since).toISOString(),
    until: q.until === null ? null : new Date(q.until).toISOString(),
    timezone: q.timezone,
    tenant: q.tenant,
    rows: out,
    totals,
  }
}
