import { Gauge, type Registry } from 'prom-client'
import type { ServerContext } from '../server/context'

/** One plan window of a subscription account (the contract's `/api/dashboard/plans` windows). */
export interface PlanWindow {
  provider: string
  /** The account's hint, never its credential. */
  account_hint: string
  /** `5h`, `7d`, `7d_opus`, ... */
  name: string
  /** 0..1 */
  utilization: number
}

/** What plan windows Burnrate knows of; set by the plan-windows feature once it exists. */
export type PlanWindowSource = () => readonly PlanWindow[]

const sources = new WeakMap<Pick<ServerContext, 'config'>, PlanWindowSource>()

/**
 * The hook for plan-window utilisation: a feature that learns plan windows (not built yet)
 * calls this with a function returning them, and `burnrate_plan_utilization_ratio` reports
 * them from then on. Until then the metric has no series.
 */
export function setPlanWindowSource(ctx: Pick<ServerContext, 'config'>, source: PlanWindowSource): void {
  sources.set(ctx, source)
}

export function planGauges(registry: Registry, ctx: Pick<ServerContext, 'config'>): void {
  new Gauge({
    name: 'burnrate_plan_utilization_ratio',
    help: "Utilisation (0-1) of each subscription plan's usage window, per provider, account hint and window.",
    labelNames: ['provider', 'account', 'window'],
    registers: [registry],
    collect() {
      this.reset()
      const source = sources.get(ctx)
      if (!source) return
      for (const w of source()) this.labels(w.provider, w.account_hint, w.name).set(w.utilization)
    },
  })
}
