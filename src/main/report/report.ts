import type { SqlReader } from '../storage/sql'
import { localMidnight } from '../time/zone'
import { type Totals, collect, finish, sumRows } from './collect'
import { costliestSessions } from './sessions'

/** The report kinds of `burnrate report` and `GET /api/dashboard/report`. */
export const REPORT_KINDS = ['daily', 'weekly', 'monthly', 'session', 'model', 'agent', 'project'] as const
export type ReportKind = (typeof REPORT_KINDS)[number]

/** The kinds whose rows are attributes, listed costliest first (and cut by `limit`). */
export const RANKED_KINDS: readonly ReportKind[] = ['session', 'model', 'agent', 'project']

/** Rows of a ranked report when no `limit` is given, and the most a `limit` may ask for. */
export const REPORT_LIMIT = { default: 100, max: 1_000_000 } as const

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
  /** How many rows the window has in all (`rows` holds the costliest `limit` of them). */
  total_rows: number
  /** Of every row of the window, those left out too. */
  totals: Omit<ReportRow, 'key' | 'models' | 'provider' | 'agent' | 'project'>
}

export interface ReportQuery {
  kind: ReportKind
  since: number | null
  until: number | null
  tenant: string | null
  timezone: string
  /** A session, model, agent or project report lists at most this many rows, costliest first; null or absent: every row. */
  limit?: number | null
}

/** A day `YYYY-MM-DD` (local midnight in `tz`) or an ISO time, as ms; `end` moves a day to the next midnight. */
export function parseWhen(s: string, tz: string, end = false): number | null {
  const d = /^(\d{4})-?(\d{2})-?(\d{2})$/.exec(s)
  if (d) return localMidnight(Number(d[1]), Number(d[2]), Number(d[3]) + (end ? 1 : 0), tz)
  const t = Date.parse(s)
  return Number.isFinite(t) && /^\d{4}-\d{2}-\d{2}T/.test(s) ? t : null
}

/**
 * Spend over a window grouped by period (in the configured zone) or by an attribute (see
 * `collect`). A session, model, agent or project report with a `limit` lists that many of its
 * costliest rows; its totals are of every row. A session report over whole days of the SQLite
 * report rollup finds them without summing every session (`costliestSessions`).
 */
export async function buildReport(db: SqlReader, q: ReportQuery, rollupZone: string | null = null): Promise<Report> {
  const limit = RANKED_KINDS.includes(q.kind) ? (q.limit ?? null) : null
  let page: { rows: ReportRow[]; totals: Totals; total_rows: number } | null = null
  if (q.kind === 'session' && limit !== null) page = await costliestSessions(db, q, limit, rollupZone)
  if (!page) {
    const all = finish(await collect(db, q, rollupZone), q.kind)
    const rows = limit !== null && all.length > limit ? all.slice(0, limit) : all
    page = { rows, totals: sumRows(all), total_rows: all.length }
  }
  return {
    kind: q.kind,
    since: q.since === null ? null : new Date(q.since).toISOString(),
    until: q.until === null ? null : new Date(q.until).toISOString(),
    timezone: q.timezone,
    tenant: q.tenant,
    rows: page.rows,
    total_rows: page.total_rows,
    totals: page.totals,
  }
}
