/** What the rest of the app (tray, notifications, dashboard) can know of budget state. */

import type { CallRecord } from '../ledger/record'
import type { SpendPeriod } from './meter'

/**
 * What a call used and cost, as the cost model learns it: a recorded call's, or a background
 * response's real usage taken by its creating call (its cost and `usage_extra` as recording gives them).
 */
export type LearntUsage = Pick<
  CallRecord, 'ts' | 'model' | 'priced' | 'cost_usd' | 'input_tokens' | 'output_tokens' | 'cache_read_tokens' | 'cache_write_tokens' | 'cache_write_1h_tokens' | 'usage_extra'
>

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
  /** Set when the alert is a rule's `alert_at_pct` threshold below 100% (e.g. 0.8). */
  threshold_pct?: number
  /**
   * Of the calls counted in `spent_usd`, those billed per token whose model has no known price
   * (counted as $0, so `spent_usd` is a lower bound): the budgets answer's `unpriced_requests` for
   * the window, where the app reads it (the tray and notifications); absent or 0 when none.
   */
  unpriced_requests?: number
}

export interface BudgetMonitor {
  /** Every key currently at a warning or blocking level, under its effective rule. */
  alerts(now?: number): BudgetAlert[]
  /** Called when a key first reaches a level under a rule in a period (once per rule, key, period and level), and at each `alert_at_pct` threshold under 100%. */
  onAlert(listener: (alert: BudgetAlert) => void): () => void
}

/** A recorded call whose cost moved by `delta` (re-pricing). */
export interface CostAdjustment {
  api_key_hash: string
  ts: number
  provider: string
  model: string
  /** The model the call requested, when the answer named another (`calls.requested_model`); matched by rules as `model` is. */
  requested_model?: string | null
  agent: string
  tenant: string
  session: string
  delta: number
  /**
   * The move is the call's real usage taken (a background response's result): it ends the hold
   * of the job's reservation (./background-holds.ts). A re-price of a job still running does not.
   */
  usage_in?: boolean
  /** With `usage_in`: the response whose hold ends (jobs a key started in the same millisecond are told apart by it). */
  response_id?: string
  /** What the key's request count moves by: -1 for an imported call the proxy's record superseded (no longer a request). */
  requests?: number
  /**
   * With `requests`: the key's newest call still a request once this one is not (its time and
   * tenant), read in the transaction that superseded it; null when none is left. Absent when not
   * known (another instance's move): the key's last-seen time and tenant then stay as they were.
   */
  latest?: KeyLatest | null
}

/** A key's newest call: when it arrived and its tenant (the admin API's last_seen_at and tenant). */
export interface KeyLatest {
  ts: number
  tenant: string
}

/** The budget state the server keeps: what the app can know, and the meters re-pricing moves. */
export interface BudgetMeters extends BudgetMonitor {
  /**
   * Re-priced calls: each call's cost moved by `delta` in every rule's meter it counts in.
   * `committedIn`: PostgreSQL, this instance's transaction that moved them (../pricing/moves.ts).
   */
  adjust(changes: readonly CostAdjustment[], now?: number, committedIn?: number | null): void
  /** A stored call that did not pass the proxy (imported from an agent's log): counted in every rule's meter it matches. */
  observe(call: CallRecord, now?: number): void
  /** A background response's result is in (or it ended without one): the reservation its creating call holds is let go. */
  endBackground?(provider: string, responseId: string): void
  /** A background response's real usage, taken by its creating call: what later background jobs of its model are expected to cost. */
  learnBackground?(provider: string, responseId: string, usage: LearntUsage): void
}
