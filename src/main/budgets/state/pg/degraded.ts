import type { SqlParams, SqlStore } from '../../../storage/sql'
import type { MemoryBudgetState } from '../memory'
import type { Reservation, ReserveOutcome, ReserveRequest } from '../types'
import type { Limiter } from './limiter'
import { bindPeriod, ruleKey, spendStart } from './sql'

/**
 * Admission while PostgreSQL does not answer: calls are decided on this instance's own meter
 * (every instance's calls as last read, plus its own since), so agents are not stranded; the
 * limit is then per instance. The costs of the calls admitted meanwhile are kept and join the
 * existing spend rows when PostgreSQL answers again (`writeLate`).
 */
export class InProcessFallback {
  /** Costs of calls decided in process, not yet in their spend rows. */
  private late: { req: ReserveRequest; cost: number }[] = []

  constructor(
    private readonly local: MemoryBudgetState,
    private readonly store: SqlStore,
    private readonly db: Limiter,
  ) {}

  /** The in-process decision on this instance's own meter (every period, the window's too), after releasing `local` if given. */
  decide(req: ReserveRequest, local: Reservation | null): ReserveOutcome {
    local?.release()
    const o = this.local.reserve(req)
    if (!o.ok) return o
    // Its cost joins the shared spend when PostgreSQL answers again.
    const late = (cost: number) => {
      if (cost > 0 && req.periods.length) this.late.push({ req, cost })
    }
    let done = false
    return {
      ...o,
      reservation: {
        settle: (cost) => {
          if (done) return
          done = true
          o.reservation.settle(cost)
          late(cost)
        },
        release: () => {
          if (done) return
          done = true
          o.reservation.release()
        },
      },
    }
  }

  /** Adds the costs of calls decided in process while PostgreSQL was away to their spend rows. */
  async writeLate(): Promise<void> {
    while (this.late.length > 0) {
      const { req, cost } = this.late[0]
      const rk = ruleKey(req.rule)
      // Only rows that already exist: a row created now starts from the calls table, which has
      // (or will have, once this instance's ledger has written it) this call already.
      const params: SqlParams = { rk, key: req.keyHash, cost }
      const calendar = req.periods.filter((p) => p.period !== 'window')
      const match = calendar.map((p, i) => {
        bindPeriod(params, i, p, req.session)
        return `(period = @p${i} AND period_start = @s${i} AND session = @n${i})`
      })
      const win = req.periods.find((p) => p.period === 'window')
      // One transaction: a retry after a failure adds nothing twice. A window's row gets the cost
      // in the bucket of the call's arrival minute, the row locked first (admission.ts).
      await this.db.run(() =>
        this.store.transaction(async (tx) => {
          if (match.length) {
            await tx.run(
              `UPDATE budget_spend SET spent_usd = spent_usd + @cost::float8 WHERE rule_key = @rk AND api_key_hash = @key AND (${match.join(' OR ')})`,
              params,
            )
          }
          if (win) {
            await tx.run(
              `WITH locked AS (SELECT id FROM budget_spend WHERE rule_key = @rk AND api_key_hash = @key AND period = 'window' AND period_start = @start AND session = '' FOR UPDATE)
               INSERT INTO budget_window_spend (spend_id, minute, spent_usd) SELECT id, @minute, @cost::float8 FROM locked
               ON CONFLICT (spend_id, minute) DO UPDATE SET spent_usd = budget_window_spend.spent_usd + excluded.spent_usd`,
              { rk, key: req.keyHash, start: spendStart(win), minute: req.ts - (req.ts % 60_000), cost },
            )
          }
        }),
      )
      this.late.shift()
    }
  }
}
