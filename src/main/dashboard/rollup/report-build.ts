import type Database from 'better-sqlite3'
import { startOfDay } from '../../time/zone'
import { MonthOf, reportZone, reportTable } from './report'
import { type ReportInput, ReportFolder } from './report-folder'
import { hasReportSessions } from './report-sessions'

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
    // Rows of days whose calls are all still here are rebuilt; older ones (pruned) stay as they
    // are (all of them when every call was pruned). The session totals do not depend on the zone:
    // they are built here only the first time.
    if (old === null) {
      db.prepare('DELETE FROM dash_report_day').run()
      if (hasReportSessions(db)) db.prepare('DELETE FROM dash_report_session').run()
    } else if (first !== null) db.prepare('DELETE FROM dash_report_day WHERE day >= ?').run(startOfDay(first, old))
    const folder = new ReportFolder(db, tz, { sessions: old === null })
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
