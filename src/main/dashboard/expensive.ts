import type { Expensive, Range } from '../../shared/api'
import { CALL_COLUMNS, toCall, type CallRow } from './calls'
import type { DashDeps } from './deps'
import { REQUESTS_ONLY, andMember, indexedBy } from './sql'
import { windowTotals } from './totals'
import { rangeWindow } from './window'

/** Below this many calls in the window, scan them by time; above, walk the cost index from the top. */
const SCAN_BY_TIME_MAX = 20_000

/**
 * The costliest calls of the window, costliest first (ties: newest first): requests, so not an
 * imported call the proxy's record of the same answer superseded (kept at $0 for the audit trail
 * and the export; ../import/supersede.ts), whose answer the list shows once, as the proxy's call.
 */
export async function expensive(
  d: DashDeps, range: Range, limit: number, tenant: string | null, now: number, member: string | null = null,
): Promise<Expensive> {
  const w = rangeWindow(range, now)
  const n = (await windowTotals(d.q, w, tenant)).requests
  if (n === 0) return { requests: [] }
  // SQLite's planner cannot know how many calls the window holds; the rollups do. (One member's
  // calls are found by the member index.)
  const index =
    member !== null
      ? 'calls_member_ts'
      : n <= SCAN_BY_TIME_MAX
        ? tenant === null ? 'calls_ts' : 'calls_tenant_ts'
        : tenant === null ? 'calls_cost' : 'calls_tenant_cost'
  const sql = `SELECT ${CALL_COLUMNS} FROM calls${indexedBy(d.q, index)}
    WHERE ts >= @start AND ts < @end${REQUESTS_ONLY}${tenant === null ? '' : ' AND tenant = @tenant'}${andMember(member)}
    ORDER BY cost_usd DESC, id DESC LIMIT @limit`
  const rows = await d.q.all<CallRow>(sql, { start: w.start, end: w.end, tenant, limit, member })
  return { requests: rows.map(toCall) }
}
