import type Database from 'better-sqlite3'
import { DayOf, MonthOf, REPORT_TIERS, type ReportTier, type RowDim, eachReportRow, reportZones } from './report'
import { UPSERT_SESSION, eachSessionRow, hasReportSessions } from './report-sessions'

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

/** A session's calls in one batch: their times and cost. */
interface Span {
  tenant: string
  session: string
  first: number
  last: number
  cost: number
}

/**
 * Folds calls into the report rollup (`dash_report_day` and `dash_report_month`, and the session
 * totals `dash_report_session`), inside the caller's transaction (the ledger's batch, or a
 * rebuild). `sessions: false` leaves the session totals alone: they do not depend on the zone, so
 * a rebuild of the days for another zone must not add its calls to them again.
 */
export class ReportFolder {
  private readonly up: { day: Database.Statement; month: Database.Statement }
  private readonly upSession: Database.Statement | null
  private readonly days: DayOf
  private readonly months: MonthOf

  constructor(db: Database.Database, tz: string, opts: { sessions?: boolean; days?: DayOf } = {}) {
    this.upSession = opts.sessions !== false && hasReportSessions(db) ? db.prepare(UPSERT_SESSION) : null
    this.days = opts.days ?? new DayOf(tz, reportZones(db))
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
    const tuples = new Map<string, Row & { session: string; first: number; last: number }>()
    for (const c of calls) {
      const day = this.days.of(c.ts)
      const project = c.project ?? ''
      const id = day + '\0' + c.tenant + '\0' + c.model + '\0' + c.provider + '\0' + c.agent + '\0' + project + '\0' + c.session
      let t = tuples.get(id)
      if (!t) {
        t = {
          dim: '', day, tenant: c.tenant, key: '', model: c.model, provider: c.provider, agent: c.agent, project, session: c.session,
          requests: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0, imported: 0, first: c.ts, last: c.ts,
        }
        tuples.set(id, t)
      } else if (c.ts < t.first) t.first = c.ts
      else if (c.ts > t.last) t.last = c.ts
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
      eachReportRow(c, (dim, tenant, key) => {
        const r = row(dim, tenant, key, c)
        add(r, c)
        if (dim === 'session') {
          if (c.agent > r.agent) r.agent = c.agent
          if (c.project > r.project) r.project = c.project
        }
      })
    }
    for (const r of rows.values()) {
      for (const [up, period] of [[this.up.day, r.day], [this.up.month, this.months.of(r.day)]] as const) {
        up.run(
          r.dim, period, r.tenant, r.key, r.model, r.provider, r.agent, r.project, r.requests, r.input, r.output,
          r.cacheRead, r.cacheWrite, r.cost, r.imported,
        )
      }
    }
    const up = this.upSession
    if (up) {
      // Each session's times and cost in this batch, from its attributions.
      const spans = new Map<string, Span>()
      for (const t of tuples.values()) {
        const sk = t.tenant + '\0' + t.session
        const s = spans.get(sk)
        if (!s) spans.set(sk, { tenant: t.tenant, session: t.session, first: t.first, last: t.last, cost: t.cost })
        else {
          if (t.first < s.first) s.first = t.first
          if (t.last > s.last) s.last = t.last
          s.cost += t.cost
        }
      }
      for (const s of spans.values()) {
        eachSessionRow(s, (across, tenant) => up.run(across, tenant, s.session, s.first, s.last, s.cost))
      }
    }
  }
}
