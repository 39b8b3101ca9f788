import type { SqlReader } from '../storage/sql'
import { andMember, andTenant, indexedBy, REQUESTS_ONLY } from './sql'
import type { Window } from './window'

/**
 * Calls whose money is unknown: recorded with no price for their model (`priced` 0, so `cost_usd`
 * 0), billed per token (a subscription call's money is 0 priced or not: its value is plan usage),
 * and requests (not superseded imports). The dashboard's spend figures count them as $0; their
 * number, beside a figure, says that it is a lower bound (README: Unpriced calls in the spend figures).
 *
 * Read from `calls`, not from the rollups: the partial index `calls_unpriced` holds only calls
 * recorded without a price, so a read touches those alone (forced on SQLite, as ./unpriced.ts
 * does; a re-price that priced them takes them out of it at once). Every window these counts
 * cover lies within what retention keeps: ranges reach 30 days and a month at most 31, while
 * `ledger.retention_days` is 32 at least; a session listed has a call in the last 24 hours, and
 * retention keeps a session's calls while it is in use.
 */
const UNPRICED = ` WHERE priced = 0 AND billing <> 'subscription'${REQUESTS_ONLY}`

function from(q: SqlReader): string {
  return `FROM calls${indexedBy(q, 'calls_unpriced')}${UNPRICED}`
}

/** How many unpriced calls are in `w` (of one tenant, or all). */
export async function unpricedIn(q: SqlReader, w: Window, tenant: string | null): Promise<number> {
  const row = await q.get<{ n: number }>(
    `SELECT count(*) AS n ${from(q)} AND ts >= @start AND ts < @end${andTenant(tenant)}`,
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
    `SELECT ${column} AS key, ${provider} AS provider, count(*) AS n ${from(q)} AND ts >= @start AND ts < @end${andTenant(tenant)}${andMember(member)}
      GROUP BY 1, 2`,
    { start: w.start, end: w.end, tenant, member },
  )
  const out = new Map<string, number>()
  for (const r of rows) out.set(r.key + '\0' + r.provider, Number(r.n))
  return out
}

/** A session row's identity, as ./sessions.ts lists rows (one per tenant, agent and session). */
export function sessionKey(r: { tenant: string; agent: string; session: string }): string {
  return r.tenant + '\0' + r.agent + '\0' + r.session
}

/**
 * Unpriced calls of named sessions with a call since `since` (every one of their calls counted,
 * however long ago, as a session row's requests and cost are), keyed by `sessionKey`.
 */
export async function unpricedSessions(q: SqlReader, since: number, tenant: string | null): Promise<Map<string, number>> {
  const rows = await q.all<{ tenant: string; agent: string; session: string; n: number }>(
    `SELECT tenant, agent, session, count(*) AS n ${from(q)} AND session <> ''${andTenant(tenant)}
      AND EXISTS (SELECT 1 FROM calls s WHERE s.session = calls.session AND s.tenant = calls.tenant AND s.agent = calls.agent
                  AND s.session <> '' AND s.ts > @since)
      GROUP BY tenant, agent, session`,
    { since, tenant },
  )
  const out = new Map<string, number>()
  for (const r of rows) out.set(sessionKey(r), Number(r.n))
  return out
}
