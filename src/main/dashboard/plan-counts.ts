import type { SqlReader } from '../storage/sql'
import { andTenant, indexedBy } from './sql'
import type { Window } from './window'

/**
 * Calls of a subscription plan (a Claude Max or Pro login, a ChatGPT plan through Codex's): no
 * money per token (their API-equivalent value is plan usage), so no part of what an average cost
 * per call is over. Requests only (not superseded imports), as every count of requests.
 */
export const PLAN_CALLS = "billing = 'subscription' AND superseded_by IS NULL"

/**
 * Those calls by time and tenant (migrations: SQLite 32, PostgreSQL 23): a window's are a range of
 * this partial index, so the count reads none of the window's calls billed per token. The rollups
 * keep the plan's value but not its calls; every window counted (today, a range of up to 30 days)
 * lies within what retention keeps.
 */
export const PLAN_CALLS_INDEX = `CREATE INDEX IF NOT EXISTS calls_plan_ts ON calls (ts, tenant) WHERE ${PLAN_CALLS}`

/** How many plan calls are in `w` (of one tenant, or all). */
export async function planCallsIn(q: SqlReader, w: Window, tenant: string | null): Promise<number> {
  const row = await q.get<{ n: number }>(
    `SELECT count(*) AS n FROM calls${indexedBy(q, 'calls_plan_ts')} WHERE ${PLAN_CALLS} AND ts >= @start AND ts < @end${andTenant(tenant)}`,
    { start: w.start, end: w.end, tenant },
  )
  return Number(row?.n ?? 0)
}

/** The calls billed per token among `requests` calls of `w`, `plan` of them a plan's. */
export function billed(requests: number, plan: number): number {
  return Math.max(0, requests - plan)
}
