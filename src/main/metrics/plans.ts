import { Gauge, type Registry } from 'prom-client'
import type { ServerContext } from '../server/context'

/**
 * Plan-window utilisation from the vendors' own meters (the plans feature's tracker, the same
 * state as `GET /api/dashboard/plans`), read at scrape time. Accounts are named by their hint,
 * never their credential.
 */
export function planGauges(registry: Registry, ctx: Pick<ServerContext, 'plans'>): void {
  new Gauge({
    name: 'burnrate_plan_utilization_ratio',
    help: "Utilisation (0-1) of each subscription plan's usage window, per provider, account hint and window.",
    labelNames: ['provider', 'account', 'window'],
    registers: [registry],
    collect() {
      this.reset()
      for (const a of ctx.plans?.list() ?? []) {
        for (const w of a.windows) this.labels(a.provider, a.account_hint, w.name).set(w.utilization)
      }
    },
  })
}
