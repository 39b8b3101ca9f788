import type { ThresholdEvent } from '../budgets/announcer'
import type { AlertClaims, HeldClaim } from './claims'
import type { Delivery, WebhookTarget } from './webhooks'

/** How often the claims of alerts sent without the database answering are asked again. */
export const LATE_CLAIM_MS = 5_000

/** Alerts sent unasked waiting for their claim beyond this many are dropped (a bound, never reached in practice). */
const MAX_LATE = 10_000

interface Late {
  e: ThresholdEvent
  webhook: WebhookTarget
}

/**
 * PostgreSQL mode: the claims of alerts this instance sent without the database answering
 * (`unasked`: sent all the same, twice rather than never), asked again every LATE_CLAIM_MS until
 * it answers. Left unwritten, another instance that read the crossing back later (a start, a read
 * of the meters) found no claim and sent it again. Won late, the claim is this delivery's as one
 * won at once is (`adopt`: settled once it is done with, let go if it fails with the webhook never
 * having taken it); lost, another instance claimed it since and sent it too. One whose delivery
 * failed with the webhook never having taken it is not claimed: the next instance to read the
 * crossing back sends it.
 */
export class LateClaims {
  private readonly waiting = new Map<Delivery, Late>()
  private timer: ReturnType<typeof setTimeout> | null = null
  /** The round under way, if any. */
  private running: Promise<void> | null = null
  private closed = false

  constructor(
    private readonly claims: AlertClaims,
    /** Whether `d` failed with the webhook never having taken it (../webhooks.ts `mayHaveReached`). */
    private readonly neverTaken: (d: Delivery) => boolean,
    /** The claim `held`, won late, is delivery `d`'s. */
    private readonly adopt: (d: Delivery, held: HeldClaim) => void,
  ) {}

  add(d: Delivery, e: ThresholdEvent, webhook: WebhookTarget): void {
    if (this.closed) return
    if (this.waiting.size >= MAX_LATE) this.waiting.clear()
    this.waiting.set(d, { e, webhook })
    this.schedule()
  }

  /**
   * Stops asking (the server's close). A claim a round under way wins is adopted still, by then
   * the server's close's to let go or settle: it waits for the promise returned, which ends with
   * that round. Not waited for, a claim won after the close had let its claims go stood, held by
   * no running instance, and the alert was sent by none.
   */
  close(): Promise<void> {
    this.closed = true
    this.waiting.clear()
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    return this.running ?? Promise.resolve()
  }

  private schedule(): void {
    if (this.timer || this.running || this.closed || this.waiting.size === 0) return
    this.timer = setTimeout(() => {
      this.timer = null
      this.running = this.round()
        .catch(() => {})
        .finally(() => {
          this.running = null
          this.schedule()
        })
    }, LATE_CLAIM_MS)
    this.timer.unref?.()
  }

  private async round(): Promise<void> {
    for (const [d, l] of [...this.waiting]) {
      if (this.closed) return
      if (this.neverTaken(d)) {
        this.waiting.delete(d)
        continue
      }
      const r = await this.claims.claim(l.e, l.webhook)
      // Still not answering: asked again next round (and the rest of this one would fail the same way).
      if (r.result === 'unasked') return
      this.waiting.delete(d)
      if (r.result === 'won') this.adopt(d, r.held)
    }
  }
}
