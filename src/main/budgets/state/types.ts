import type { Meter, PeriodState } from '../meter'
import type { Rule } from '../rules'

/**
 * The budget-state seam: where a `block` rule's money limits are reserved against and settled.
 * `memory` (SQLite, one instance) keeps them in the rule's in-process meter, synchronously, with
 * no database round trip on the hot path; `postgres` keeps them in spend rows shared by every
 * instance on one database, reserved and settled atomically in it.
 */

/** What to reserve for one call under one `block` rule. */
export interface ReserveRequest {
  rule: Rule
  /** The rule's meter for the call's key (local figures: periods, resets, rolling window). */
  meter: Meter
  keyHash: string
  session: string
  /** Arrival time (ms): the periods the call counts in. */
  ts: number
  /** The rule's money limits as this instance sees them (monthly, weekly, daily, window, session). */
  periods: PeriodState[]
  /** `expected`: the call's expected cost; `max_tokens`: its worst case. */
  amount: number
}

export type RefusalKind = 'reached' | 'reserved' | 'worst_case'

export interface Reservation {
  /** The call ended: counts its real cost (postgres; memory counts it when the ledger records the call) and frees the reservation. */
  settle(costUsd: number): void
  /** The call failed before it cost anything: frees the reservation (settle with 0). */
  release(): void
  /**
   * Set when `settle` adds the cost to shared spend rows (postgres, not decided in process): the
   * reservation's id and those rows' ids, which the call carries to the ledger
   * (`CallRecord.budget_settled`) so that storing it does not add its cost to them again (or adds
   * it, when the settlement was not written first: pg/call-spend.ts).
   */
  readonly settles?: string
}

export type ReserveOutcome =
  | {
      ok: true
      reservation: Reservation
      /** The periods as the state saw them when it admitted (shared figures on postgres), for warnings. */
      periods: PeriodState[]
    }
  | {
      ok: false
      kind: RefusalKind
      /** The period whose limit refused the call, with the spend figures the refusal names. */
      state: PeriodState
      reservedUsd: number
      worstCaseUsd: number
    }

export interface BudgetState {
  readonly kind: 'memory' | 'postgres'
  /** Admits (reserving `amount`) or refuses. Synchronous for `memory`. */
  reserve(req: ReserveRequest): ReserveOutcome | Promise<ReserveOutcome>
  /**
   * Reserves `amount` without the admission test: a background response admitted before a
   * restart, whose reservation is held again (../background-holds.ts).
   */
  hold?(req: ReserveRequest): Reservation | Promise<Reservation>
  /** Stops background work (lease renewal, expiry sweeps). */
  close?(): Promise<void>
}
