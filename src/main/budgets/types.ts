/** What the rest of the app (tray, notifications, dashboard) can know of budget state. */

import type { SpendPeriod } from './meter'

export type BudgetLevel = 'ok' | 'warning' | 'blocking'

export interface BudgetAlert {
  api_key_pattern: string
  api_key_hash: string
  key_hint: string
  period: SpendPeriod
  /** `warning`: at or over `soft_limit_pct` (or over a `warn` rule's limit); `blocking`: a `block` rule's limit is reached. */
  level: Exclude<BudgetLevel, 'ok'>
  spent_usd: number
  limit_usd: number
  /** ISO-8601 UTC start of the next period. */
  resets_at: string
}

export interface BudgetMonitor {
  /** Every key currently at a warning or blocking level, under its effective rule. */
  alerts(now?: number): BudgetAlert[]
  /** Called when a key first reaches a level under a rule in a period (once per rule, key, period and level). */
  onAlert(listener: (alert: BudgetAlert) => void): () => void
}
