import type Database from 'better-sqlite3'
import { startOfDay, startOfMonth } from '../../time/zone'

/**
 * The report rollup: per local day (in the zone named in `dash_report_state.tz`), tenant and
 * model, what `burnrate report` sums, so a report reads days instead of calls (and still answers
 * for days whose raw calls retention pruned). Rows of `dim` '' are per model and provider (the
 * period and model reports); rows of `dim` 'agent', 'project' and 'session' are per that key too
 * (session rows also keep the greatest agent and project of the session's calls). `cost_usd` is
 * every call's `cost_usd`, as the report sums it (subscription calls' API-equivalent value too).
 * Rows of `dim` '*', '*agent' and '*project' are those of '', 'agent' and 'project' across
 * tenants (`tenant` ''), so a report of every tenant reads one row where a team has one per
 * tenant (a session belongs to one tenant, so sessions have none).
 * `dash_report_month` holds the same per local month (the local midnight that begins it), so a
 * report over months reads a row per month instead of one per day. Its rows are, by
 * construction, the sums of the day rows whose `day` falls in the month (see `MonthOf`).
 * This file holds the tables and their keys; `ReportFolder` (./report-folder.ts) writes them with
 * each batch, ./report-build.ts builds them (for a zone, and from the days for the months).
 */
export const REPORT_DIMS = ['', 'agent', 'project', 'session'] as const
export type ReportDim = (typeof REPORT_DIMS)[number]
/** The dims with rows across tenants, and the name of those rows' dim. */
export const ACROSS_TENANTS = { '': '*', agent: '*agent', project: '*project' } as const
export type RowDim = ReportDim | (typeof ACROSS_TENANTS)[keyof typeof ACROSS_TENANTS]

/** The dim of the rows a report reads: those across tenants when it is of every tenant and has them. */
export function reportDim(dim: ReportDim, tenant: string | null): RowDim {
  return tenant === null && dim !== 'session' ? ACROSS_TENANTS[dim] : dim
}

/** The key of a call's row of `dim`. */
function reportKey(dim: ReportDim, c: { agent: string; project: string; session: string }): string {
  return dim === '' ? '' : dim === 'agent' ? c.agent : dim === 'project' ? c.project : c.session
}

/**
 * Each row of a period that a call's attribution is summed into, as its dim, tenant and key:
 * one per dim of the call's tenant, and one across tenants for every dim but session. Both the
 * batch folder and re-pricing walk these, so they always touch the same rows.
 */
export function eachReportRow(
  c: { tenant: string; agent: string; project: string; session: string },
  visit: (dim: RowDim, tenant: string, key: string) => void,
): void {
  for (const dim of REPORT_DIMS) {
    const key = reportKey(dim, c)
    visit(dim, c.tenant, key)
    if (dim !== 'session') visit(ACROSS_TENANTS[dim], '', key)
  }
}

/** A table of the report rollup and the name of its period column. */
export interface ReportTier {
  table: string
  col: string
}

/** The report rollup's tables. */
export const REPORT_TIERS: { day: ReportTier; month: ReportTier } = {
  day: { table: 'dash_report_day', col: 'day' },
  month: { table: 'dash_report_month', col: 'month' },
}

export function reportTable(table: string, col: string): string {
  return `
    CREATE TABLE ${table} (
      dim TEXT NOT NULL,
      ${col} INTEGER NOT NULL,
      tenant TEXT NOT NULL,
      key TEXT NOT NULL,
      model TEXT NOT NULL,
      provider TEXT NOT NULL,
      agent TEXT NOT NULL,
      project TEXT NOT NULL,
      requests INTEGER NOT NULL,
      input_tokens INTEGER NOT NULL,
      output_tokens INTEGER NOT NULL,
      cache_read_tokens INTEGER NOT NULL,
      cache_write_tokens INTEGER NOT NULL,
      cost_usd REAL NOT NULL,
      imported INTEGER NOT NULL,
      PRIMARY KEY (dim, ${col}, tenant, key, model, provider)
    ) WITHOUT ROWID;`
}

/** Migration 11: the day table and the zone it is kept in. */
export function createReportTables(db: Database.Database): void {
  db.exec(`
    ${reportTable('dash_report_day', 'day')}
    CREATE TABLE dash_report_state (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      tz TEXT
    );
    INSERT INTO dash_report_state (id, tz) VALUES (1, NULL);
  `)
}

/** Whether the ledger has the table (or index) `name`: which migrations it has had. */
export function hasTable(db: Database.Database, name: string): boolean {
  return (db.prepare('SELECT count(*) FROM sqlite_master WHERE name = ?').pluck().get(name) as number) > 0
}

/** The zone the report rollup's days are in; null when it is not built (or the schema predates it). */
export function reportZone(db: Database.Database): string | null {
  if (!hasTable(db, 'dash_report_state')) return null
  return (db.prepare('SELECT tz FROM dash_report_state WHERE id = 1').pluck().get() as string | null | undefined) ?? null
}

const QUARTER_HOUR = 900_000

/**
 * A stretch of calls whose report rows were folded in one zone: from `from` (ms; the first
 * stretch from the beginning) to the next stretch's. A change of zone rebuilds the days only from
 * where every call is still there (retention prunes at any instant): the rows before stay in the
 * zone they were built in, and the first rebuilt day starts at the stretch's `from`, not at its
 * midnight, so no row holds calls of two stretches and a later change (or a re-price) finds each
 * call's row where it was folded.
 */
export interface ZoneSpan {
  from: number
  tz: string
}

/** Migration 26: the zone stretches of the report rows (`zones`, JSON; NULL: one zone, `tz`, from the beginning). */
export function addReportZones(db: Database.Database): void {
  if (!hasTable(db, 'dash_report_state')) return
  const cols = new Set((db.prepare('PRAGMA table_info(dash_report_state)').all() as { name: string }[]).map((c) => c.name))
  if (!cols.has('zones')) db.exec('ALTER TABLE dash_report_state ADD COLUMN zones TEXT')
}

/** The stretches of `zones` as stored (JSON, the first one's `from` null), or [] for NULL or anything unreadable. */
export function parseZones(text: string | null | undefined): ZoneSpan[] {
  if (!text) return []
  try {
    const list = JSON.parse(text) as { from: number | null; tz: string }[]
    return Array.isArray(list) ? list.map((z) => ({ from: z.from ?? -Infinity, tz: z.tz })) : []
  } catch {
    return []
  }
}

export function formatZones(spans: readonly ZoneSpan[]): string | null {
  return spans.length === 0 ? null : JSON.stringify(spans.map((z) => ({ from: Number.isFinite(z.from) ? z.from : null, tz: z.tz })))
}

/** The stretches of the report rows (see ZoneSpan); [] when one zone holds them all. */
export function reportZones(db: Database.Database): ZoneSpan[] {
  if (!hasTable(db, 'dash_report_state')) return []
  const cols = db.prepare('PRAGMA table_info(dash_report_state)').all() as { name: string }[]
  if (!cols.some((c) => c.name === 'zones')) return []
  return parseZones(db.prepare('SELECT zones FROM dash_report_state WHERE id = 1').pluck().get() as string | null)
}

/**
 * The report day of calls: the local day in `tz`, cached per quarter-hour (every zone's day starts
 * on one), never before the current stretch's start; a call from before it (an old call imported,
 * one re-priced), the day of the stretch it falls in, as it was folded.
 */
export class DayOf {
  private qh = NaN
  private day = 0
  private readonly floor: number
  private readonly earlier: readonly ZoneSpan[]

  constructor(
    readonly tz: string,
    spans: readonly ZoneSpan[] = [],
  ) {
    const last = spans.at(-1)
    this.floor = last && last.tz === tz ? last.from : -Infinity
    this.earlier = last && last.tz === tz ? spans.slice(0, -1) : []
  }

  of(ts: number): number {
    if (ts < this.floor) return this.before(ts)
    const qh = Math.floor(ts / QUARTER_HOUR)
    if (qh !== this.qh) {
      this.qh = qh
      this.day = Math.max(startOfDay(ts, this.tz), this.floor)
    }
    return this.day
  }

  private before(ts: number): number {
    for (let i = this.earlier.length - 1; i >= 0; i--) {
      const z = this.earlier[i]
      if (ts >= z.from || i === 0) return Math.max(startOfDay(ts, z.tz), z.from)
    }
    return startOfDay(ts, this.tz)
  }
}

/**
 * The local month of a report day: the local midnight that begins the month holding the day's
 * own start (cached for the last day asked). A day row built in another zone (kept when
 * retention pruned its calls) goes to the month its start falls in, so a month row is always the
 * sum of the day rows with `month <= day < next month`, and reading months or their days agrees.
 */
export class MonthOf {
  private day = NaN
  private month = 0
  constructor(readonly tz: string) {}
  of(day: number): number {
    if (day !== this.day) {
      this.day = day
      this.month = startOfMonth(day, this.tz)
    }
    return this.month
  }
}
