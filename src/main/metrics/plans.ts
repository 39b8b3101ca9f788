import { Gauge, type Registry } from 'prom-client'
import type { ServerContext } from '../server/context'

/**
 * Plan-window utilisation from the vendors' own meters (the plans feature's tracker, the same
 * state as `GET /api/dashboard/plans`), read at scrape time. Accounts are named by their hint and
 * told apart by their `account_id` (accounts may share a hint), never by their credential.
 */
export function planGauges(registry: Registry, ctx: Pick<ServerContext, 'plans'>): void {
  new Gauge({
    name: 'burnrate_plan_utilization_ratio',
    help: "Utilisation (0-1) of each subscription plan's usage window, per provider, account (its hint and id) and window.",
    labelNames: ['provider', 'account', 'account_id', 'window'],
    registers: [registry],
    collect() {
      this.reset()
      for (const a of ctx.plans?.list() ?? []) {
        for (const w of a.windows) this.labels(a.provider, a.account_hint, a.account_id, w.name).set(w.utilization)
      }
    },
  })
}
