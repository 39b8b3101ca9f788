import type { Summary } from '../../shared/api'
import { startOfDay, startOfMonth, startOfNextDay, startOfNextMonth } from '../time/zone'
import { ACTIVE_MS, type DashDeps } from './deps'
import { billed, planCallsIn } from './plan-counts'
import { WITH_REQUESTS } from './sessions'
import { andTenant } from './sql'
import { windowTotals } from './totals'
import { unpricedIn } from './unpriced-counts'

/**
 * Today's and this month's spend (periods begin in the configured zone), and today's rates. A call
 * counts in the day and month its stamp falls in, as in `report` and the budgets: one stamped later
 * today (a team member's clock running fast, an imported log) is today's, not left out until then.
 */
export async function summary(d: DashDeps, tenant: string | null, now: number): Promise<Summary> {
  const day = { start: startOfDay(now, d.tz), end: startOfNextDay(now, d.tz) }
  const monthWindow = { start: startOfMonth(now, d.tz), end: startOfNextMonth(now, d.tz) }
  const today = await windowTotals(d.q, day, tenant)
  const month = await windowTotals(d.q, monthWindow, tenant)
  // A session is its id: the rollup keeps a row per (tenant, agent, session), so one session that
  // two agents (or tenants) carried is counted once. The last-call indexes find the active rows.
  // A row at 0 requests is none: its only calls were imported ones the proxy's record superseded.
  // A last call stamped after now is active too, as the sessions list says (./sessions.ts).
  const { active } = (await d.q.get<{ active: number }>(
    `SELECT count(DISTINCT session) AS active FROM dash_session WHERE last_ts > @since${andTenant(tenant)}${WITH_REQUESTS}`,
    { since: now - ACTIVE_MS, tenant },
  ))!
  // Calls of no known price, counted as $0 in the spend: read from the calls (./unpriced-counts.ts).
  const todayUnpriced = await unpricedIn(d.q, day, tenant)
  const monthUnpriced = await unpricedIn(d.q, monthWindow, tenant)
  // The average cost is over the calls billed per token: a plan's call costs no money (./plan-counts.ts).
  const todayBilled = billed(today.requests, await planCallsIn(d.q, day, tenant))
  return {
    today_spend_usd: today.cost_usd,
    month_spend_usd: month.cost_usd,
    today_plan_value_usd: today.plan_value_usd,
    month_plan_value_usd: month.plan_value_usd,
    today_requests: today.requests,
    today_billed_requests: todayBilled,
    avg_cost_per_request_usd: todayBilled > 0 ? today.cost_usd / todayBilled : 0,
    active_sessions: active,
    error_rate: today.requests > 0 ? today.failed / today.requests : 0,
    timezone: d.tz,
    today_unpriced_requests: todayUnpriced,
    month_unpriced_requests: monthUnpriced,
  }
}
