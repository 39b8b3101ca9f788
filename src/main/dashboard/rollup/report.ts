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
 */
export const REPORT_DIMS = ['', 'agent', 'project', 'session'] as const
export type ReportDim = (typeof REPORT_DIMS)[number]
/** The dims with rows across tenants, and the name of those rows' dim. */
export const ACROSS_TENANTS = { '': '*', agent: '*agent', project: '*project' } as const
type RowDim = ReportDim | (typeof ACROSS_TENANTS)[keyof typeof ACROSS_TENANTS]

/** The dim of the rows a report reads: those across tenants when it is of every tenant and has them. */
export function reportDim(dim: ReportDim, tenant: string | null): RowDim {
  return tenant === null && dim !== 'session' ? ACROSS_TENANTS[dim] : dim
}

/** The key of a call's row of `dim`. */
export function reportKey(dim: ReportDim, c: { agent: string; project: string; session: string }): string {
  return dim === '' ? '' : dim === 'agent' ? c.agent : dim === 'project' ? c.project : c.session
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

function reportTable(table: string, col: string): string {
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

/**
 * Migration 13: the rows across tenants, summed from the day rows of each tenant, and the month
 * table, filled from the day rows (when the rollup is built).
 */
export function createReportMonths(db: Database.Database): void {
  db.exec(reportTable('dash_report_month', 'month'))
  const tz = reportZone(db)
  if (tz === null) return
  db.exec(`
    INSERT INTO dash_report_day (dim, day, tenant, key, model, provider, agent, project, requests, input_tokens,
                                 output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, imported)
    SELECT '*' || dim, day, '', key, model, provider, max(agent), max(project), sum(requests), sum(input_tokens),
           sum(output_tokens), sum(cache_read_tokens), sum(cache_write_tokens), total(cost_usd), sum(imported)
      FROM dash_report_day WHERE dim IN ('', 'agent', 'project')
     GROUP BY dim, day, key, model, provider`)
  rebuildReportMonths(db, tz)
}

/** The zone the report rollup's days are in; null when it is not built (or the schema predates it). */
export function reportZone(db: Database.Database): string | null {
  const has = db.prepare(`SELECT count(*) FROM sqlite_master WHERE name = 'dash_report_state'`).pluck().get() as number
  if (!has) return null
  return (db.prepare('SELECT tz FROM dash_report_state WHERE id = 1').pluck().get() as string | null | undefined) ?? null
}

/** A call as the report rollup reads it. */
export interface ReportInput {
  ts: number
  tenant: string
  provider: string
  model: string
  agent: string
  session: string
  project?: string
  source?: string
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  cost_usd: number
}

interface Row {
  dim: RowDim
  day: number
  tenant: string
  key: string
  model: string
  provider: string
  agent: string
  project: string
  requests: number
  input: number
  output: number
  cacheRead: number
  cacheWrite: number
  cost: number
  imported: number
}

const QUARTER_HOUR = 900_000

/** The local day of calls, cached per quarter-hour (every zone's day starts on one). */
export class DayOf {
  private qh = NaN
  private day = 0
  constructor(readonly tz: string) {}
  of(ts: number): number {
    const qh = Math.floor(ts / QUARTER_HOUR)
    if (qh !== this.qh) {
      this.qh = qh
      this.day = startOfDay(ts, this.tz)
    }
    return this.day
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

/** Folds calls into `dash_report_day`, inside the caller's transaction (the ledger's batch, or a rebuild). */
export class ReportFolder {
  private readonly up: { day: Database.Statement; month: Database.Statement }
  private readonly days: DayOf
  private readonly months: MonthOf

  constructor(db: Database.Database, tz: string) {
    this.days = new DayOf(tz)
    this.months = new MonthOf(tz)
    const upsert = ({ table, col }: ReportTier) =>
      db.prepare(`
      INSERT INTO ${table} (dim, ${col}, tenant, key, model, provider, agent, project, requests, input_tokens,
                                   output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, imported)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (dim, ${col}, tenant, key, model, provider) DO UPDATE SET
        agent = max(agent, excluded.agent), project = max(project, excluded.project),
        requests = requests + excluded.requests, input_tokens = input_tokens + excluded.input_tokens,
        output_tokens = output_tokens + excluded.output_tokens,
        cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
        cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
        cost_usd = cost_usd + excluded.cost_usd, imported = imported + excluded.imported`)
    this.up = { day: upsert(REPORT_TIERS.day), month: upsert(REPORT_TIERS.month) }
  }

  fold(calls: readonly ReportInput[]): void {
    // First per call's whole attribution (one lookup a call), then each of those into its rows:
    // four of its tenant, three across tenants.
    const tuples = new Map<string, Row & { session: string }>()
    for (const c of calls) {
      const day = this.days.of(c.ts)
      const project = c.project ?? ''
      const id = day + '\0' + c.tenant + '\0' + c.model + '\0' + c.provider + '\0' + c.agent + '\0' + project + '\0' + c.session
      let t = tuples.get(id)
      if (!t) {
        t = {
          dim: '', day, tenant: c.tenant, key: '', model: c.model, provider: c.provider, agent: c.agent, project, session: c.session,
          requests: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0, imported: 0,
        }
        tuples.set(id, t)
      }
      t.requests++
      t.input += c.input_tokens
      t.output += c.output_tokens
      t.cacheRead += c.cache_read_tokens
      t.cacheWrite += c.cache_write_tokens
      t.cost += c.cost_usd
      if (c.source === 'import') t.imported++
    }
    const rows = new Map<string, Row>()
    const row = (dim: RowDim, tenant: string, key: string, c: Row) => {
      const id = dim + '\0' + c.day + '\0' + tenant + '\0' + key + '\0' + c.model + '\0' + c.provider
      let r = rows.get(id)
      if (!r) {
        r = {
          dim, day: c.day, tenant, key, model: c.model, provider: c.provider, agent: '', project: '',
          requests: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0, imported: 0,
        }
        rows.set(id, r)
      }
      return r
    }
    const add = (r: Row, c: Row) => {
      r.requests += c.requests
      r.input += c.input
      r.output += c.output
      r.cacheRead += c.cacheRead
      r.cacheWrite += c.cacheWrite
      r.cost += c.cost
      r.imported += c.imported
    }
    for (const c of tuples.values()) {
      for (const dim of REPORT_DIMS) {
        const key = reportKey(dim, c)
        const r = row(dim, c.tenant, key, c)
        add(r, c)
        if (dim === 'session') {
          if (c.agent > r.agent) r.agent = c.agent
          if (c.project > r.project) r.project = c.project
        } else add(row(ACROSS_TENANTS[dim], '', key, c), c)
      }
    }
    for (const r of rows.values()) {
      for (const [up, period] of [[this.up.day, r.day], [this.up.month, this.months.of(r.day)]] as const) {
        up.run(
          r.dim, period, r.tenant, r.key, r.model, r.provider, r.agent, r.project, r.requests, r.input, r.output,
          r.cacheRead, r.cacheWrite, r.cost, r.imported,
        )
      }
    }
  }
}

/**
 * Makes the report rollup's days those of `tz`: when it was built for another zone (or never),
 * it is rebuilt from the calls the rollups include. Days before the oldest call kept (pruned by
 * retention) cannot be rebuilt and keep the zone they were built in. Returns how many calls it folded.
 */
export function ensureReportZone(db: Database.Database, tz: string): number {
  if (reportZone(db) === tz) return 0
  return db.transaction(() => {
    const first = db.prepare('SELECT min(ts) FROM calls').pluck().get() as number | null
    const last = (db.prepare('SELECT last_call_id FROM dash_state WHERE id = 1').pluck().get() as number | undefined) ?? 0
    const old = reportZone(db)
    // Rows of days whose calls are all still here are rebuilt; older ones (pruned) stay as they are.
    if (first === null || old === null) db.prepare('DELETE FROM dash_report_day').run()
    else db.prepare('DELETE FROM dash_report_day WHERE day >= ?').run(startOfDay(first, old))
    const folder = new ReportFolder(db, tz)
    const chunk = db.prepare(`
      SELECT id, ts, tenant, provider, model, agent, session, project, source, input_tokens, output_tokens,
             cache_read_tokens, cache_write_tokens, cost_usd
        FROM calls WHERE id > ? AND id <= ? ORDER BY id LIMIT 50000`)
    let after = 0
    let n = 0
    for (;;) {
      const rows = chunk.all(after, last) as (ReportInput & { id: number })[]
      if (rows.length === 0) break
      folder.fold(rows)
      after = rows[rows.length - 1].id
      n += rows.length
    }
    db.prepare('UPDATE dash_report_state SET tz = ? WHERE id = 1').run(tz)
    rebuildReportMonths(db, tz)
    return n
  })()
}

/**
 * Rebuilds `dash_report_month` from the day rows (inside the caller's transaction): each day row
 * into the month of `tz` that its day starts in.
 */
export function rebuildReportMonths(db: Database.Database, tz: string): void {
  db.prepare('DELETE FROM dash_report_month').run()
  // Every call is folded into the '' rows, so their days are all the days there are.
  const days = db.prepare(`SELECT DISTINCT day FROM dash_report_day WHERE dim = ''`).pluck().all() as number[]
  db.exec('CREATE TEMP TABLE report_month_of (day INTEGER PRIMARY KEY, month INTEGER NOT NULL)')
  try {
    const put = db.prepare('INSERT INTO temp.report_month_of (day, month) VALUES (?, ?)')
    const months = new MonthOf(tz)
    for (const day of days) put.run(day, months.of(day))
    db.exec(`
      INSERT INTO dash_report_month (dim, month, tenant, key, model, provider, agent, project, requests, input_tokens,
                                     output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, imported)
      SELECT d.dim, m.month, d.tenant, d.key, d.model, d.provider, max(d.agent), max(d.project), sum(d.requests),
             sum(d.input_tokens), sum(d.output_tokens), sum(d.cache_read_tokens), sum(d.cache_write_tokens),
             total(d.cost_usd), sum(d.imported)
        FROM dash_report_day d JOIN temp.report_month_of m ON m.day = d.day
       GROUP BY d.dim, m.month, d.tenant, d.key, d.model, d.provider`)
  } finally {
    db.exec('DROP TABLE temp.report_month_of')
  }
}
