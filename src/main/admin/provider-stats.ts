import { LOOP_REASON, RATE_REASON, REFUSAL_REASON } from '../budgets/gate'
import type { CallRecord } from '../ledger/record'
import { STATUS_CLIENT_CLOSED } from '../ledger/record'
import { BATCH_RESULT_LIKE } from '../providers/batch-results'
import { STOPPED_REASON } from '../proxy/call/stop-cut'
import type { SqlReader } from '../storage/sql'
import { PeriodClock } from '../time/zone'

export interface ProviderDay {
  requests: number
  errors: number
  latencySum: number
  lastStatus: number | null
  lastError: string | null
  lastAt: number | null
}

/** What went wrong with a call, for `last_error`; null when nothing did. */
export function callError(c: Pick<CallRecord, 'status' | 'error'>): string | null {
  if (c.status === STATUS_CLIENT_CLOSED) return null // the client left; not the provider's failure
  if (c.error === STOPPED_REASON) return null // Burnrate's stop cut it; not the provider's failure either
  if (c.error) return c.error
  return c.status >= 400 ? `HTTP ${c.status}` : null
}

/**
 * Today's live status of each provider (in the configured zone), from the proxied traffic:
 * seeded from the calls table at start-up, then kept by every recorded call. Calls refused by a
 * budget never reached the provider and do not count.
 */
export class ProviderStats {
  private readonly clock: PeriodClock
  private dayStart = 0
  private days = new Map<string, ProviderDay>()

  constructor(timezone: string) {
    this.clock = new PeriodClock(timezone)
  }

  /**
   * The day of `now`, or the later one already counted: never back. A start-up read begun before
   * midnight and answered after it (PostgreSQL) set the day back to the ended one, and the calls
   * of the new day counted meanwhile were lost with it.
   */
  private today(now: number): Map<string, ProviderDay> {
    const start = this.clock.dayOf(now).start
    if (start > this.dayStart) {
      this.dayStart = start
      this.days = new Map()
    }
    return this.days
  }

  private day(name: string, now: number): ProviderDay {
    const days = this.today(now)
    let d = days.get(name)
    if (!d) {
      d = { requests: 0, errors: 0, latencySum: 0, lastStatus: null, lastError: null, lastAt: null }
      days.set(name, d)
    }
    return d
  }

  observe(c: CallRecord, now = Date.now()): void {
    // Calls Burnrate itself refused (budgets, rate limits) never reached the provider.
    // Nor do calls of a day that has ended (the read's, when the day counted is a later one).
    if (c.error === REFUSAL_REASON || c.error === RATE_REASON || c.error === LOOP_REASON || c.ts < Math.max(this.clock.dayOf(now).start, this.dayStart)) return
    const d = this.day(c.provider, now)
    d.requests++
    d.latencySum += c.latency_ms
    const err = callError(c)
    if (err) {
      d.errors++
      d.lastError = err
    }
    if (d.lastAt === null || c.ts >= d.lastAt) {
      d.lastAt = c.ts
      d.lastStatus = c.status
    }
  }

  /**
   * Replays today's calls from the ledger (at start-up), those that began before `now`: calls
   * observed live from then on are counted by `observe`, so none is counted twice even when the
   * store answers after calls have begun to arrive (PostgreSQL). Only the proxy's own, as `observe`
   * sees them: not calls imported from agents' logs, nor a team member's (they reached no provider here),
   * nor a Batch API's requests stored from its results file (they ran at the provider; the read that
   * brought them is the call that reached it, and the ledger never tells `observe` of them).
   */
  async seed(store: SqlReader, now = Date.now()): Promise<void> {
    const rows = await store.all<CallRecord>(
      `SELECT provider, status, error, latency_ms, ts FROM calls
        WHERE ts >= @start AND ts < @now AND source = 'proxy' AND origin_id IS NULL
          AND endpoint NOT LIKE @batch AND (error IS NULL OR error NOT IN (@refused, @rate, @loop)) ORDER BY ts, id`,
      { start: this.clock.dayOf(now).start, now, batch: BATCH_RESULT_LIKE, refused: REFUSAL_REASON, rate: RATE_REASON, loop: LOOP_REASON },
    )
    for (const r of rows) this.observe(r, now)
  }

  get(name: string, now = Date.now()): ProviderDay | undefined {
    return this.today(now).get(name)
  }
}
