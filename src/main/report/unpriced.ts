import { andTenant, indexedBy } from '../dashboard/sql'
import type { SqlReader } from '../storage/sql'
import { isPeriodic, periodKey, QUARTER_HOUR_SQL } from './collect'
import type { Report, ReportQuery } from './types'

/**
 * The calls a report counts (not an imported call the proxy's record superseded) recorded with no
 * known price: $0 in its `cost_usd`. Plan usage too (`billing: subscription`): the report counts it
 * at its API-equivalent value, unknown for these. Read through the partial index of such calls.
 */
const UNPRICED = 'priced = 0 AND superseded_by IS NULL'

/**
 * Each row's and the totals' `unpriced_requests`: the unpriced calls of the report's window, by
 * its rows' keys (a period in its zone, a model and provider, a session, agent or project). From
 * the calls, as the dashboard counts its own (a day whose calls retention pruned has none left).
 */
export async function withUnpriced(db: SqlReader, q: ReportQuery, r: Report): Promise<Report> {
  const where = [UNPRICED]
  if (q.since !== null) where.push('ts >= @since')
  if (q.until !== null) where.push('ts < @until')
  const from = `FROM calls${indexedBy(db, 'calls_unpriced')} WHERE ${where.join(' AND ')}${andTenant(q.tenant)}`
  const args = { since: q.since, until: q.until, tenant: q.tenant }
  const counts = new Map<string, number>()
  const count = (key: string, n: number) => counts.set(key, (counts.get(key) ?? 0) + n)
  let total = 0
  if (isPeriodic(q.kind)) {
    const kind = q.kind
    for (const x of await db.all<{ qh: number; n: number }>(`SELECT ${QUARTER_HOUR_SQL} AS qh, count(*) AS n ${from} GROUP BY qh`, args)) {
      count(periodKey(Number(x.qh), kind, q.timezone), Number(x.n))
      total += Number(x.n)
    }
  } else {
    const sql =
      q.kind === 'model'
        ? `SELECT model AS key, provider, count(*) AS n ${from} GROUP BY model, provider`
        : `SELECT ${q.kind} AS key, '' AS provider, count(*) AS n ${from} GROUP BY ${q.kind}`
    for (const x of await db.all<{ key: string; provider: string; n: number }>(sql, args)) {
      count(`${x.key}\0${x.provider}`, Number(x.n))
      total += Number(x.n)
    }
  }
  const keyOf = (row: Report['rows'][number]) => (isPeriodic(q.kind) ? row.key : `${row.key}\0${q.kind === 'model' ? (row.provider ?? '') : ''}`)
  return {
    ...r,
    rows: r.rows.map((row) => ({ ...row, unpriced_requests: counts.get(keyOf(row)) ?? 0 })),
    totals: { ...r.totals, unpriced_requests: total },
  }
}
