import { Registry, collectDefaultMetrics } from 'prom-client'
import { BudgetEngine } from '../budgets/engine'
import type { Feature } from '../server/context'
import { budgetGauges, refusalRule } from './budgets'
import { CallMetrics } from './calls'
import { ledgerGauges } from './ledger'
import { planGauges } from './plans'
import { UpstreamTiming } from './upstream'

/** Counts are brought up to date at least this often even when nobody scrapes (the queue stays small). */
const DRAIN_MS = 1000

/**
 * `GET /metrics`: Prometheus text exposition (prom-client), when `metrics.enabled`. Behind the
 * same front-door checks as the dashboard (Host, cross-site, and `dashboard.token` when set,
 * which listening beyond loopback requires: see security/exposure.ts).
 */
export const metrics: Feature = (ctx) => {
  if (!ctx.config.metrics.enabled) return
  const registry = new Registry()
  const engine = (): BudgetEngine | null => (ctx.budgets instanceof BudgetEngine ? ctx.budgets : null)
  const calls = new CallMetrics(registry, refusalRule(engine))
  const stopListening = ctx.ledger.onCall(calls.observe)
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
    timing.close()
  })

  ctx.app.get('/metrics', async (_req, res, next) => {
    try {
      calls.drain()
      const text = await registry.metrics()
      res.setHeader('content-type', registry.contentType)
      res.setHeader('cache-control', 'no-store')
      res.send(text)
    } catch (err) {
      next(err)
    }
  })
}

