import type { RequestHandler } from 'express'
import type { Feature } from '../server/context'

/**
 * `GET /metrics`: Prometheus text exposition (prom-client), when `metrics.enabled`. Behind the
 * same front-door checks as the dashboard (Host, cross-site, and `dashboard.token` when set,
 * which listening beyond loopback requires: see security/exposure.ts). prom-client and the
 * counters (./install.ts) are loaded only when metrics are on; the server listens once they are.
 */
export const metrics: Feature = (ctx) => {
  if (!ctx.config.metrics.enabled) return
  let scrape: RequestHandler | null = null
  // The route takes its place among the others now; it answers once the counters are loaded.
  ctx.app.add((app) => app.get('/metrics', (req, res, next) => (scrape ? scrape(req, res, next) : next())))
  return import('./install').then(({ installMetrics }) => {
    scrape = installMetrics(ctx)
  })
}
