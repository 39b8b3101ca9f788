import type { ThresholdEvent } from '../budgets/announcer'
import { REARM_MINUTES } from './claims'

/** Crossings remembered beyond this many are forgotten all at once (a bound, never reached in practice). */
const MAX_SENT = 100_000
/** A crossing with no end of its own (a calendar period's resetsAt unknown) is remembered this long. */
const KEEP_MS = 45 * 86_400_000

/**
 * The crossings this instance has sent to a webhook (its claim won, or sent with the database not
 * answering), by claim id (./claims.ts), each with when it was sent and until when it matters: a
 * calendar period's until the period resets, a rolling window's for a window's length (as long as
 * its crossing is kept as announced). PostgreSQL mode: a read of the meters whose snapshot misses
 * a call this instance recorded (not stored yet) counts it again, and finds the crossing it made
 * again, kept as announced (told `onRestored`). Claimed again, that claim lost to the first one's
 * row; but the first sent unasked left none (and a window's crossing before it left one 10 minutes
 * or more older than it), and it won: the webhook got the alert twice.
 */
export class SentHere {
  private readonly sent = new Map<string, { at: number; until: number }>()
  private pruned = 0

  note(id: string, e: ThresholdEvent, now = Date.now()): void {
    this.prune(now)
    if (this.sent.size >= MAX_SENT) this.sent.clear()
    const until = e.state.period === 'window' ? now + (e.state.lengthMs ?? KEEP_MS) : (e.state.resetsAt ?? now + KEEP_MS)
    this.sent.set(id, { at: now, until })
  }

  /** Notes claim `id` of an alert a kill left (../outbox.ts), being sent again by this start, until `until`. */
  hold(id: string, until: number, now = Date.now()): void {
    this.prune(now)
    if (this.sent.size >= MAX_SENT) this.sent.clear()
    this.sent.set(id, { at: now, until })
  }

  /** Forgets a crossing noted as it was claimed, once the claim is lost (another instance sends it). */
  forget(id: string): void {
    this.sent.delete(id)
  }

  /**
   * Whether `e`, a crossing found again (restored), is one this instance sent to the webhook of
   * claim `id`: a calendar period's, sent in that period (the id names it); a rolling window's,
   * sent since the window last crossed it, less the 10 minutes a claim re-arms in, as a claim
   * counts it (`crossedAt`, from the announcer's clock: a later crossing, another instance's, is
   * news).
   */
  covers(id: string, e: ThresholdEvent, now = Date.now()): boolean {
    const s = this.sent.get(id)
    if (!s || s.until <= now) return false
    return e.state.period !== 'window' || e.crossedAt === undefined || s.at >= e.crossedAt - REARM_MINUTES * 60_000
  }

  private prune(now: number): void {
    if (now - this.pruned < 3600_000) return
    this.pruned = now
    for (const [id, s] of this.sent) if (s.until <= now) this.sent.delete(id)
  }
}
