import { warningLevel } from './levels'
import type { PeriodState, RateState } from './meter'
import type { Rule } from './rules'

/** What the budget engine answers for a call (./engine.ts `decide`), and the warnings it carries. */
export interface Refusal {
  rule: Rule
  /** `reached`: spend is at or over a limit; `reserved`: calls in flight are expected to use what is left; `worst_case`: this call could take it over (`reserve: max_tokens`); `rate`: a per-minute limit. */
  kind: 'reached' | 'reserved' | 'worst_case' | 'rate'
  state: PeriodState | null
  rate: RateState | null
  worstCaseUsd: number
  reservedUsd: number
}

export interface Warning {
  rule: Rule
  state: PeriodState | null
  rate: RateState | null
}

export interface Decision {
  refuse?: Refusal
  /**
   * The admitted call is not sent after all (another API key it carries was refused): takes back
   * the request its admission counted, as a refused call is never counted.
   */
  unsent?: () => void
  /** Limits at their warning level (a `warn` rule's limit, or `soft_limit_pct`). */
  warnings: Warning[]
  /**
   * The call ended, with its real cost (0 when it failed): frees its reservation. Returns the
   * shared spend rows (postgres) the cost was added to, for the call's record
   * (`CallRecord.budget_settled`); nothing when no shared row took it.
   *
   * `pending`: the call created a background response still running (its POST answered `queued`):
   * `costUsd` is only its estimate, so the reservation stays held until the response's real usage
   * is in (./background-holds.ts); the ledger counts the estimate meanwhile, as for any call.
   */
  settle?: (costUsd?: number, pending?: PendingBackground) => string | void
}

/** A background response whose result is not in yet: what a later answer about it names. */
export interface PendingBackground {
  provider: string
  responseId: string
}

/** A call no rule decides: nothing to warn of, refuse or settle. */
export const NOTHING: Decision = { warnings: [] }

/** The periods at their warning level, as warnings (a new array: the caller may add a rate warning). */
export function warningsOf(rule: Rule, periods: readonly PeriodState[]): Warning[] {
  const out: Warning[] = []
  for (const state of periods) if (warningLevel(rule, state)) out.push({ rule, state, rate: null })
  return out
}
