import type { SqlReader } from '../storage/sql'
import { andMember, andTenant, bucketStartSql, indexedBy } from './sql'
import type { Window } from './window'

/**
 * Calls whose money is unknown: recorded with no price for their model (`priced` 0, so `cost_usd`
 * 0), billed per token (a subscription call's money is 0 priced or not: its value is plan usage),
 * and requests (not superseded imports). The dashboard's spend figures count them as $0; their
 * number, beside a figure, says that it is a lower bound (README: Unpriced calls in the spend figures).
 */
export const UNPRICED = "priced = 0 AND billing <> 'subscription' AND superseded_by IS NULL"

/**
 * Those calls by time and tenant (migrations: SQLite 31, PostgreSQL 21): a window's are a range of
 * this partial index, however many priced calls the window holds, and a re-price that finds a
 * price takes its calls out of it at once. So they are counted from the calls, not the rollups:
 * every window they cover lies within what retention keeps (ranges reach 30 days and a month 31,
 * while `ledger.retention_days` is 32 at least). A session listed covers its whole life, which may
 * not (a team server's ingested calls are pruned by age alone; a session resumed after a week idle):
 * its row says how many of its requests were pruned (`dash_session.pruned_requests`, which retention
 * adds to as it prunes: ../ledger/retention.ts).
 */
export const UNPRICED_SPEND_INDEX = `CREATE INDEX IF NOT EXISTS calls_unpriced_spend ON calls (ts, tenant) WHERE ${UNPRICED}`

/** The unpriced calls from `@start` on (to `@end` when `bounded`), by the index (which SQLite's planner is told). */
export function from(q: SqlReader, bounded = true): string {
  return `FROM calls${indexedBy(q, 'calls_unpriced_spend')} WHERE ${UNPRICED} AND ts >= @start${bounded ? ' AND ts < @end' : ''}`
}

/** How many unpriced calls are in `w` (of one tenant, or all). */
export async function unpricedIn(q: SqlReader, w: Window, tenant: string | null): Promise<number> {
  const row = await q.get<{ n: number }>(
    `SELECT count(*) AS n ${from(q)}${andTenant(tenant)}`,
    { start: w.start, end: w.end, tenant },
  )
  return Number(row?.n ?? 0)
}

/**
 * Unpriced calls in `w` per group of calls' `column` (and per provider when `byProvider`), keyed
 * `key + '\0' + provider` (provider '' unless `byProvider`), as ./costs.ts keys its rows.
 */
export async function unpricedBy(
  q: SqlReader, w: Window, column: string, byProvider: boolean, tenant: string | null, member: string | null,
): Promise<Map<string, number>> {
  const provider = byProvider ? 'provider' : "''"
  const rows = await q.all<{ key: string; provider: string; n: number }>(
    `SELECT ${column} AS key, ${provider} AS provider, count(*) AS n ${from(q)}${andTenant(tenant)}${andMember(member)}
      GROUP BY 1, 2`,
    { start: w.start, end: w.end, tenant, member },
  )
  const out = new Map<string, number>()
  for (const r of rows) out.set(r.key + '\0' + r.provider, Number(r.n))
  return out
}

/**
 * Unpriced calls in `w` per bucket of `size` ms (buckets start at multiples of `size` since the
 * epoch, floored, as ./timeseries.ts lays them out), keyed by the bucket's start (ms). The index holds `ts`,
 * so no call's row is read: a count per bucket of the index's range.
 */
export async function unpricedByBucket(q: SqlReader, w: Window, size: number, tenant: string | null): Promise<Map<number, number>> {
  const b = bucketStartSql('ts', size)
  const rows = await q.all<{ b: number; n: number }>(
    `SELECT ${b} AS b, count(*) AS n ${from(q)}${andTenant(tenant)} GROUP BY ${b}`,
    { start: w.start, end: w.end, tenant },
  )
  const out = new Map<number, number>()
  for (const r of rows) out.set(Number(r.b), Number(r.n))
  return out
}

/** A session row's identity, as ./sessions.ts lists rows (one per tenant, agent and session). */
export function sessionKey(r: { tenant: string; agent: string; session: string }): string {
  return r.tenant + '\0' + r.agent + '\0' + r.session
}

/**
 * Unpriced calls of the named sessions that are calls from `start` on (the first call of the oldest
 * session listed: so every call of each, however long ago, as a session row's requests and cost
 * count them), keyed by `sessionKey`.
 */
export async function unpricedSessions(q: SqlReader, start: number, tenant: string | null): Promise<Map<string, number>> {
  const rows = await q.all<{ tenant: string; agent: string; session: string; n: number }>(
    `SELECT tenant, agent, session, count(*) AS n ${from(q, false)} AND session <> ''${andTenant(tenant)} GROUP BY tenant, agent, session`,
    { start, tenant },
  )
  const out = new Map<string, number>()
  for (const r of rows) out.set(sessionKey(r), Number(r.n))
  return out
}
