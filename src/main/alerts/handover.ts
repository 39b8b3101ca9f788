import type { ThresholdEvent } from '../budgets/announcer'
import { MAX_TIMER_MS } from '../config/schema'
import type { AlertClaims } from './claims'
import { MAX_RETRY_AFTER_MS, type WebhookTarget } from './webhooks'

/** How often an instance standing by for a claim another won asks where it stands. */
export const STANDBY_POLL_MS = 2_000

/** Claims stood by for beyond this many are dropped (a bound, never reached in practice). */
const MAX_STANDING = 10_000

/**
 * The longest a delivery can take, with the instance's own alerts settings (the team's instances
 * share them): every attempt timing out, each retry's wait doubled from the backoff, or the
 * longest Retry-After, and a minute more. An instance stands by this long for a claim another won.
 */
export function deliveryMs(o: { retries: number; backoffMs: number; timeoutMs: number }): number {
  let ms = (o.retries + 1) * o.timeoutMs + 60_000
  for (let i = 0; i < o.retries; i++) ms += Math.max(Math.min(MAX_TIMER_MS, o.backoffMs * 2 ** i), MAX_RETRY_AFTER_MS)
  return Math.min(ms, MAX_TIMER_MS)
}

interface Standing {
  e: ThresholdEvent
  webhook: WebhookTarget
  until: number
}

/**
 * PostgreSQL mode: the claims of crossings this instance lost to another, for a webhook this
 * instance has too, until the winner's delivery ends. The winner sends the alert with its own
 * config's password: when that is stale (401), or the webhook fails it to the last (5xx, the
 * network), no other instance sent it. A winner whose delivery failed with the webhook never
 * having taken it (refused with a status, no connection made) lets its claim go (./index.ts),
 * and one standing by here finds it free and claims it (`reclaim`), and sends it with its own
 * settings; one delivered, or failed after the webhook may have taken it (a timeout), is
 * settled and not sent again. Asked every STANDBY_POLL_MS, while any claim is stood by for.
 */
export class ClaimStandby {
  private readonly waiting = new Map<string, Standing>()
  private timer: ReturnType<typeof setTimeout> | null = null
  private closed = false

  constructor(
    private readonly claims: AlertClaims,
    private readonly waitMs: number,
    private readonly reclaim: (e: ThresholdEvent, webhook: WebhookTarget) => void,
  ) {}

  /** Stands by for claim `id` of `e` for `webhook`, lost to another instance just now. */
  add(id: string, e: ThresholdEvent, webhook: WebhookTarget, now = Date.now()): void {
    if (this.closed) return
    if (this.waiting.size >= MAX_STANDING) this.waiting.clear()
    this.waiting.set(id, { e, webhook, until: now + this.waitMs })
    this.schedule()
  }

  close(): void {
    this.closed = true
    this.waiting.clear()
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
  }

  private schedule(): void {
    if (this.timer || this.closed || this.waiting.size === 0) return
    this.timer = setTimeout(() => {
      void this.poll().finally(() => {
        this.timer = null
        this.schedule()
      })
    }, STANDBY_POLL_MS)
    this.timer.unref?.()
  }

  /** Claims stood by for now. */
  get size(): number {
    return this.waiting.size
  }

  /** Every claim stood by for, asked in one query (not one each: many crossings lost at once). */
  private async poll(now = Date.now()): Promise<void> {
    for (const [id, s] of this.waiting) if (s.until <= now) this.waiting.delete(id)
    const asked = [...this.waiting]
    if (asked.length === 0) return
    const standing = await this.claims.standing(asked.map(([id]) => id), this.waitMs).catch(() => null)
    if (!standing) return
    for (const [id, s] of asked) {
      const st = standing.get(id)
      if (this.closed) return
      if (st === 'held' || this.waiting.get(id) !== s) continue
      this.waiting.delete(id)
      if (st === 'free') this.reclaim(s.e, s.webhook)
    }
  }
}
