import { LIST_LIMIT_DEFAULT, type SessionRow, type Sessions } from '../../shared/api'
import { ACTIVE_MS, type DashDeps } from './deps'
import { andTenant, bytewise } from './sql'
import { sessionKey, unpricedSessions } from './unpriced-counts'

const DAY = 86_400_000

/**
 * A session's row counts a request: one at 0 counts none (its only calls were imported ones the
 * proxy's record superseded, ../import/supersede.ts), so it is no session, as a rebuild of the
 * rollups (which leaves those calls out) has no row for it.
 */
export const WITH_REQUESTS = ' AND requests > 0'

/**
 * Named sessions with a call in the last 24 h, most recent first, at most `limit` of them (and how many in all). `requests`, `cost_usd` and
 * `started_at` cover the whole session, also the part before the 24 h. A session whose last call is
 * stamped after now (a team member's clock running fast, an imported log) is listed, active: it was
 * left out, calls from before included, until its last call's time came. `unpriced_requests` counts
 * the calls retention keeps, `pruned_requests` those it pruned (of no price known any more).
 */
export async function sessions(d: DashDeps, tenant: string | null, now: number, limit = LIST_LIMIT_DEFAULT): Promise<Sessions> {
  const args = { since: now - DAY, tenant, limit }
  const { n } = (await d.q.get<{ n: number }>(
    `SELECT count(*) AS n FROM dash_session WHERE last_ts > @since${andTenant(tenant)}${WITH_REQUESTS}`,
    args,
  ))!
  const rows = await d.q.all<{
    session: string
    agent: string
    tenant: string
    first_ts: number
    last_ts: number
    requests: number
    cost_usd: number
    pruned_requests: number
  }>(
    `SELECT session, agent, tenant, first_ts, last_ts, requests, cost_usd, pruned_requests FROM dash_session
      WHERE last_ts > @since${andTenant(tenant)}${WITH_REQUESTS}
      ORDER BY last_ts DESC, ${bytewise(d.q, 'session')} LIMIT @limit`,
    args,
  )
  // Every call of the sessions listed, from the first call of the oldest.
  const first = rows.reduce((m, r) => Math.min(m, r.first_ts), Number.MAX_SAFE_INTEGER)
  const unpriced = rows.length > 0 ? await unpricedSessions(d.q, first, tenant) : new Map<string, number>()
  return {
    sessions: rows.map(
      (r): SessionRow => ({
        session: r.session,
        agent: r.agent,
        tenant: r.tenant,
        started_at: new Date(r.first_ts).toISOString(),
        last_seen_at: new Date(r.last_ts).toISOString(),
        requests: r.requests,
        cost_usd: r.cost_usd,
        unpriced_requests: unpriced.get(sessionKey(r)) ?? 0,
        // Retention adds them to the session's row as it prunes (../ledger/retention.ts, COUNT_PRUNED).
        pruned_requests: Number(r.pruned_requests),
        status: now - r.last_ts < ACTIVE_MS ? 'active' : 'idle',
      }),
    ),
    total: n,
  }
}
