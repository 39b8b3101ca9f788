import type { MemoryBudgetState } from '../memory'
import type { Reservation, ReserveOutcome, ReserveRequest } from '../types'

/**
 * Admission while PostgreSQL does not answer: calls are decided on this instance's own meter
 * (every instance's calls as last read, plus its own since), so agents are not stranded; the
 * limit is then per instance. Nothing is reserved in the database, so the settlement writes
 * nothing there: such a call carries no `settles` rows, and its cost joins the shared spend rows
 * when the ledger stores it (call-spend.ts), in the transaction that stores it, once — or, for
 * a row created after that, through the row's seed from `calls`.
 */
export class InProcessFallback {
  constructor(private readonly local: MemoryBudgetState) {}

  /** The in-process decision on this instance's own meter (every period, the window's too), after releasing `local` if given. */
  decide(req: ReserveRequest, local: Reservation | null): ReserveOutcome {
    local?.release()
    return this.local.reserve(req)
  }
}
