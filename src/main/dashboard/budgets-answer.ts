import { budgetsOf } from '../budgets'
import type { ServerContext } from '../server/context'
import type { BudgetsOverview } from '../../shared/api'
import { answerMoment, budgetsOverview, ingestedSpend } from './budgets'
import { countUnpriced, type UnpricedSpan } from './budget-unpriced'

/**
 * The answer of `GET /api/dashboard/budgets` at `now` (of one tenant, or null for all), as the
 * route gives it and the desktop app's own tray and notices read it (the unpriced counts: the
 * meters count money only). Read when asked, never on the proxy's path.
 */
export async function budgetsAnswer(ctx: ServerContext, tenant: string | null, now: number): Promise<BudgetsOverview> {
  const q = ctx.store
  // `overall` is all spend, as the summary counts it: a team server's members' calls too.
  const spend = ctx.ledger.spend
  const engine = budgetsOf(ctx).engine
  // Each window's calls of no known price (counted as $0 in its spend), read after the figures (./budget-unpriced.ts).
  const spans: UnpricedSpan[] = []
  const withUnpriced = async (o: BudgetsOverview) => {
    await countUnpriced(q, spans, now)
    return o
  }
  if (tenant !== null) return withUnpriced(budgetsOverview(engine, spend, tenant, now, undefined, spans))
  let at = now
  let ingested = await ingestedSpend(q, spend, at)
  // A call meanwhile rolled the totals or a meter into the next day, which the whole answer is
  // then of (answerMoment): the members' spend of that day goes with them.
  for (let next = answerMoment(engine, spend, at); spend.clock.dayOf(next).start !== spend.clock.dayOf(at).start; next = answerMoment(engine, spend, at)) {
    at = next
    ingested = await ingestedSpend(q, spend, at)
  }
  return withUnpriced(budgetsOverview(engine, spend, tenant, at, ingested, spans))
}
