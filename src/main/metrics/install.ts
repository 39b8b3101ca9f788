import type { RequestHandler } from 'express'
import { Registry, collectDefaultMetrics } from 'prom-client'
import { BudgetEngine } from '../budgets/engine'
import { onCostMoved } from '../pricing/moves'
import type { ServerContext } from '../server/context'
import { budgetGauges, refusalRule } from './budgets'
import { CallMetrics } from './calls'
import { ledgerGauges } from './ledger'
import { planGauges } from './plans'
import { UpstreamTiming } from './upstream'

/** Counts are brought up to date at least this often even when nobody scrapes (the queue stays small). */
const DRAIN_MS = 1000

/** Sets up the counters and returns the `/metrics` handler (./index.ts loads this only when `metrics.enabled`). */
export function installMetrics(ctx: ServerContext): RequestHandler {
  const registry = new Registry()
  const engine = (): BudgetEngine | null => (ctx.budgets instanceof BudgetEngine ? ctx.budgets : null)
  const calls = new CallMetrics(registry, refusalRule(engine))
  const stopListening = ctx.ledger.onCall(calls.observe)
  const stopMoves = onCostMoved(ctx.ledger, calls.moved)
  const timer = setInterval(() => calls.drain(), DRAIN_MS)
  timer.unref()
  const timing = new UpstreamTiming(registry)
  ctx.aroundProxy = timing.run
  budgetGauges(registry, engine, ctx.ledger.spend)
  planGauges(registry, ctx)
  ledgerGauges(registry, ctx)
  collectDefaultMetrics({ register: registry, prefix: 'burnrate_' })
  // Gauges named like counters: Prometheus's own checker rejects them, and they say little here.
  for (const name of ['active_handles_total', 'active_requests_total', 'active_resources_total']) {
    registry.removeSingleMetric(`burnrate_nodejs_${name}`)
  }
  ctx.onClose(() => {
    clearInterval(timer)
    stopListening()
    stopMoves()
    timing.close()
  })

  const scrape: RequestHandler = async (_req, res, next) => {
    try {
      calls.drain()
      const text = await registry.metrics()
      res.setHeader('content-type', registry.contentType)
      res.setHeader('cache-control', 'no-store')
      res.send(text)
    } catch (err) {
      next(err)
    }
  }
  return scrape
}
