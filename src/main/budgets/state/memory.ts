import type { BudgetState, Reservation, ReserveOutcome, ReserveRequest } from './types'
import { reached, reachedAt } from '../reached'

/**
 * Today's in-process accounting (SQLite, one instance): reservations live on the rule's meter
 * for the key, spend is what the ledger fed the meter. Synchronous: no database on the hot path.
 *
 * A call is let through while committed spend plus what the calls in flight are expected to
 * cost is under the limit; its own expected cost is then reserved (README: overshoot). With
 * `reserve: max_tokens` it is let through only when its worst case fits in what is left.
 */
export class MemoryBudgetState implements BudgetState {
  readonly kind = 'memory' as const

  reserve(req: ReserveRequest): ReserveOutcome {
    const { rule, meter: m, periods, amount } = req
    if (rule.reserve === 'max_tokens') {
      if (amount > 0) {
        for (const p of periods) {
          const reserved = p.period === 'session' ? 0 : m.reservedUsd
          if (amount > reachedAt(p.limit) - p.spent - reserved) return { ok: false, kind: 'worst_case', state: p, reservedUsd: m.reservedUsd, worstCaseUsd: amount }
        }
      }
    } else if (m.reservedUsd > 0) {
      for (const p of periods) {
        if (p.period !== 'session' && reached(p.spent + m.reservedUsd, p.limit)) return { ok: false, kind: 'reserved', state: p, reservedUsd: m.reservedUsd, worstCaseUsd: 0 }
      }
    }
    return { ok: true, periods, reservation: this.hold(req) }
  }

  /** Reserves `amount` on the meter, admitted or not (a reservation held again after a restart). */
  hold(req: ReserveRequest): Reservation {
    const { meter: m, amount } = req
    m.inFlight++
    m.reservedUsd += amount
    let settled = false
    const free = () => {
      if (settled) return
      settled = true
      m.inFlight--
      // Summing and subtracting floats drifts; with nothing in flight the reservation is exactly 0.
      m.reservedUsd = m.inFlight === 0 ? 0 : Math.max(0, m.reservedUsd - amount)
    }
    return { settle: free, release: free }
  }
}
