import type Database from 'better-sqlite3'
import { prunedBefore } from '../../ledger/retention'
import { isUtc, localMidnight, offsetMs, startOfDay, startOfNextDay } from '../../time/zone'
import { DayOf, MonthOf, type ZoneSpan, formatZones, reportZone, reportZones, reportTable } from './report'
import { type ReportInput, ReportFolder } from './report-folder'
import { hasReportSessions } from './report-sessions'
import { hasColumn } from './writer'

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
    const old = reportZone(db)
    // The oldest call from where retention keeps them all: retention keeps a few older calls (the
    // newest recorded, the last revised), whose pruned neighbours only the old rows still count;
    // rebuilding from one of those would delete weeks of pruned days.
    const pruned = old === null ? 0 : prunedBefore(db)
    const first = db.prepare('SELECT min(ts) FROM calls WHERE ts >= ?').pluck().get(pruned) as number | null
    const last = (db.prepare('SELECT last_call_id FROM dash_state WHERE id = 1').pluck().get() as number | undefined) ?? 0
    // Rows of days whose calls are all still here are rebuilt; older ones (pruned) stay as they
    // are (all of them when every call was pruned). The session totals do not depend on the zone:
    // they are built here only the first time.
    // Rows before the current stretch's start were kept from earlier zones: never rebuilt.
    const spans = old === null ? [] : reportZones(db)
    const spanStart = spans.at(-1)?.tz === old ? spans.at(-1)!.from : -Infinity
    let from = -Infinity
    if (old === null) {
      db.prepare('DELETE FROM dash_report_day').run()
      if (hasReportSessions(db)) db.prepare('DELETE FROM dash_report_session').run()
    } else if (first !== null) {
      from = rebuildFrom(db, first, last, old, spanStart)
      db.prepare('DELETE FROM dash_report_day WHERE day >= ?').run(from)
    } else {
      // Only calls retention kept behind (or none): every row stays, nothing is folded again; the
      // new zone's days start after every call and row there is.
      const newest = db.prepare(`SELECT max((SELECT max(ts) FROM calls), (SELECT max(day) FROM dash_report_day))`).pluck().get() as number | null
      from = Math.max(spanStart, newest === null ? -Infinity : newest + 1)
    }
    // A stretch starts only where rows of earlier zones stay below it (none: all rebuilt, in one zone).
    const below = from !== -Infinity && db.prepare('SELECT 1 FROM dash_report_day WHERE day < ? LIMIT 1').get(from) !== undefined
    const zones: ZoneSpan[] =
      old === null || !below ? [] : [...(spans.at(-1)?.tz === old ? spans : [{ from: -Infinity, tz: old }]).filter((z) => z.from < from), { from, tz }]
    const folder = new ReportFolder(db, tz, { sessions: old === null, days: new DayOf(tz, zones) })
    const chunk = db.prepare(`
      SELECT id, ts, tenant, provider, model, agent, session, project, source, input_tokens, output_tokens,
             cache_read_tokens, cache_write_tokens, cost_usd
        FROM calls WHERE id > ? AND id <= ? AND ts >= ?${requestsOnly(db)} ORDER BY id LIMIT 50000`)
    let after = 0
    let n = 0
    for (;;) {
      const rows = chunk.all(after, last, from) as (ReportInput & { id: number })[]
      if (rows.length === 0) break
      folder.fold(rows)
      after = rows[rows.length - 1].id
      n += rows.length
    }
    db.prepare('UPDATE dash_report_state SET tz = ?, zones = ? WHERE id = 1').run(tz, formatZones(zones))
    rebuildReportMonths(db, tz)
    return n
  })()
}

/**
 * Where a zone change rebuilds the day rows from (in `old`'s days): the day of the oldest call
 * kept when all of that day's calls are still here, else the next day. Retention cuts at any
 * instant, not at a midnight, so the oldest day kept may have lost its earlier calls, which only
 * its row still counts: that row then stays as it is, and the calls from the next midnight on are
 * folded in the new zone's days (none of them is in both).
 */
function rebuildFrom(db: Database.Database, first: number, last: number, old: string, spanStart: number): number {
  // Calls before the current stretch are counted by rows kept from an earlier zone, whose calls
  // may be pruned in part: only the stretch's own rows can be rebuilt (all of its calls are kept).
  if (first < spanStart) return spanStart
  const day = Math.max(startOfDay(first, old), spanStart)
  const next = startOfNextDay(first, old)
  const counted = db.prepare(`SELECT total(requests) FROM dash_report_day WHERE dim = '' AND day = ?`).pluck().get(day) as number
  const kept = db.prepare(`SELECT count(*) FROM calls WHERE ts >= ? AND ts < ? AND id <= ?${requestsOnly(db)}`).pluck().get(day, next, last) as number
  return kept >= counted ? day : next
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

const REPORT_SUMS = ['requests', 'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'cost_usd', 'imported']
const DAY_MS = 86_400_000

/**
 * Before this release, a day whose midnight does not exist in a zone west of UTC (Chile, Cuba,
 * Brazil, Paraguay: 00:00 becomes 01:00) was keyed an hour early, at 23:00 of the day before, so
 * reports filed that whole day under the day before. Such rows (keyed exactly at the instant the
 * old computation gave, which no true day start equals) move to the day's true start, and the
 * months are rebuilt. Rows kept from another zone (pruned days) are not touched. Run once, by
 * ledger migration 18 (it was run at every start-up: about 5 ms per year of ledger): it looks only
 * at the days around the zone's offset changes between the rollup's first and last day (one offset
 * per day; nothing at all in UTC), and finds nothing once done. Returns how many days it moved.
 */
export function repairSkippedMidnights(db: Database.Database, tz: string): number {
  if (isUtc(tz)) return 0
  const range = db.prepare(`SELECT min(day) AS a, max(day) AS b FROM dash_report_day WHERE dim = ''`).get() as { a: number | null; b: number | null }
  if (range.a === null || range.b === null) return 0
  const moves: [number, number][] = []
  const first = Math.floor(range.a / DAY_MS) * DAY_MS
  let before = offsetMs(first - DAY_MS, tz)
  let here = offsetMs(first, tz)
  for (let wall = first; wall <= range.b + DAY_MS; wall += DAY_MS) {
    const after = offsetMs(wall + DAY_MS, tz)
    if (before !== after) {
      // The old two-pass midnight of the local day `wall` (written as UTC), against the true one.
      const old = wall - offsetMs(wall - here, tz)
      const d = new Date(wall)
      const start = localMidnight(d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), tz)
      if (start !== old && startOfDay(old, tz) !== old) moves.push([old, start])
    }
    before = here
    here = after
  }
  const has = db.prepare(`SELECT 1 FROM dash_report_day WHERE dim = '' AND day = ? LIMIT 1`).pluck()
  const found = moves.filter(([from]) => has.get(from) !== undefined)
  if (found.length === 0) return 0
  const move = db.prepare(`
    INSERT INTO dash_report_day (dim, day, tenant, key, model, provider, agent, project, ${REPORT_SUMS.join(', ')})
    SELECT dim, @to, tenant, key, model, provider, agent, project, ${REPORT_SUMS.join(', ')}
      FROM dash_report_day WHERE day = @from
        ON CONFLICT (dim, day, tenant, key, model, provider) DO UPDATE SET
           ${REPORT_SUMS.map((c) => `${c} = dash_report_day.${c} + excluded.${c}`).join(', ')}`)
  const drop = db.prepare('DELETE FROM dash_report_day WHERE day = @from')
  db.transaction(() => {
    for (const [from, to] of found) {
      move.run({ from, to })
      drop.run({ from })
    }
    rebuildReportMonths(db, tz)
  })()
  return found.length
}

/** Leaves out the imported calls the proxy superseded (no request, $0; ../../import/supersede.ts), once the ledger has the column. */
function requestsOnly(db: Database.Database): string {
  return hasColumn(db, 'calls', 'superseded_by') ? ' AND superseded_by IS NULL' : ''
}
