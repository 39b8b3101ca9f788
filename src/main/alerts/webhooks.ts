import { AsyncResource } from 'node:async_hooks'
import { randomUUID } from 'node:crypto'
import { type OutboundAlert, slackBody } from './payload'
import type { Egress } from '../http/egress'
import { basicAuthRequest } from '../http/basic-auth'
import { request } from '../http/request'
import { retryAfter } from '../http/retry-after'
import { MAX_TIMER_MS } from '../config/schema'
import { redactUrl } from './webhook-url'

export type WebhookFormat = 'json' | 'slack'

export interface WebhookTarget {
  url: string
  format: WebhookFormat
}

/** One alert sent (or being sent) to one webhook, as the delivery log shows it. */
/** Mirrors AlertDelivery in src/shared/api.ts. */
export interface Delivery {
  id: string
  event_id: string
  type: OutboundAlert['type']
  /** The webhook's origin; its path is left out (Slack's and others' paths are secrets). */
  url: string
  format: WebhookFormat
  status: 'pending' | 'delivered' | 'failed'
  attempts: number
  last_status: number | null
  last_error: string | null
  created_at: string
  updated_at: string
}

export interface WebhookOptions {
  retries: number
  backoffMs: number
  timeoutMs: number
  /** The longest a webhook's Retry-After is waited for (MAX_RETRY_AFTER_MS unless set: tests). */
  maxRetryAfterMs?: number
  /** How to reach the webhooks (behind a proxy: upstream.proxy, HTTPS_PROXY); unset: directly. */
  egress?: Egress
  /**
   * Called when a delivery ends for good while the sender runs: delivered, or failed at its last
   * attempt. Not for one that close() ends (its return tells those not sent).
   */
  onSettled?: (d: Delivery) => void
}

/** Why a delivery `abandon`ed ended. */
const ABANDONED = 'another Burnrate instance took its claim over and sends it'

/** Where a webhook's POST goes: its URL without a user name and password, which go as a header. */
type Address = ReturnType<typeof basicAuthRequest>

/** Deliveries kept for the log (the most recent). */
export const LOG_SIZE = 200

/**
 * How long shutdown waits for webhook attempts under way before it cuts them: the ledger and the
 * database are closed after the senders, and alerts.timeout_ms (up to days) must not hold them.
 */
export const CLOSE_WAIT_MS = 2_000

/**
 * The longest wait a webhook's Retry-After gets (README: Alerts): longer than the seconds to a
 * minute Slack asks for when it rate-limits, short enough that the alert still tells of spend as
 * it is and a retry waiting in memory (dropped at shutdown) is not held for long. A longer ask
 * (a misconfigured server's 10 days) waits this long, and the attempt after counts as usual.
 */
export const MAX_RETRY_AFTER_MS = 5 * 60_000

/**
 * POSTs alerts to the configured webhooks with undici, off the hot path: each delivery is tried
 * at once (once the first attempt of the alert before it to the same webhook has ended), then retried after `backoffMs`, doubled each time, up to `retries` more times, when
 * the attempt times out, fails on the network or gets a status other than 2xx; a 429 or 503's
 * Retry-After (seconds or an HTTP date) is waited for instead when it is longer, up to
 * MAX_RETRY_AFTER_MS. The last
 * LOG_SIZE deliveries are kept in memory for the dashboard (a restart starts the log afresh).
 */
export class WebhookSender {
  private readonly log: Delivery[] = []
  /** Retries waiting, with their deliveries. */
  private readonly timers = new Map<ReturnType<typeof setTimeout>, Delivery>()
  /** Attempts under way, with their deliveries. */
  private readonly running = new Map<Promise<void>, Delivery>()
  /** Deliveries waiting for the first attempt of the one before them to the same webhook to end. */
  private readonly queued = new Set<Delivery>()
  /** Per webhook URL: when the first attempt of the last delivery made for it has ended. */
  private readonly lastFirst = new Map<string, Promise<void>>()
  /** Deliveries another sends now (`abandon`): not tried again. */
  private readonly abandoned = new WeakSet<Delivery>()
  /** Deliveries an attempt of which failed with no answer after it may have been sent (`mayHaveReached`). */
  private readonly unanswered = new WeakSet<Delivery>()
  /** Deliveries whose last attempt failed before a connection was made: that attempt sent nothing. */
  private readonly unconnected = new WeakSet<Delivery>()
  private closed = false
  /** Aborted CLOSE_WAIT_MS into close(): cuts the attempts still under way. */
  private readonly cut = new AbortController()
  /**
   * The async context the sender was made in (start-up): a delivery runs in it, not in that of the
   * proxied call whose cost crossed a threshold, so its POST is not timed as the call's request
   * upstream (../metrics/upstream.ts), nor are its retries.
   */
  private readonly outside = new AsyncResource('burnrate.webhooks')

  constructor(
    private readonly targets: readonly WebhookTarget[],
    private readonly opts: WebhookOptions,
  ) {}

  get configured(): number {
    return this.targets.length
  }

  /** The webhooks, as configured. */
  get webhooks(): readonly WebhookTarget[] {
    return this.targets
  }

  /** Queues `payload` for every webhook (or those of `only`); returns their deliveries (updated in place as they progress). */
  send(payload: OutboundAlert, only?: readonly WebhookTarget[]): Delivery[] {
    return this.sendTracked(payload, only).deliveries
  }

  /** As `send`, with a promise that settles when every first attempt has ended. */
  sendTracked(payload: OutboundAlert, only: readonly WebhookTarget[] = this.targets): { deliveries: Delivery[]; firstAttempts: Promise<unknown> } {
    if (this.closed) return { deliveries: [], firstAttempts: Promise.resolve() }
    const first: Promise<void>[] = []
    const deliveries = only.map((t) => {
      const now = new Date().toISOString()
      const d: Delivery = {
        id: randomUUID(), event_id: payload.id, type: payload.type, url: redactUrl(t.url), format: t.format,
        status: 'pending', attempts: 0, last_status: null, last_error: null, created_at: now, updated_at: now,
      }
      this.log.push(d)
      if (this.log.length > LOG_SIZE) this.log.splice(0, this.log.length - LOG_SIZE)
      const body = JSON.stringify(t.format === 'slack' ? slackBody(payload) : payload)
      // A user name and password in the URL go as basic auth (undici would drop them: 401 at every attempt).
      const to = basicAuthRequest(t.url)
      first.push(this.outside.runInAsyncScope(() => this.inTurn(t.url, d, () => this.attempt(to, body, d))))
      return d
    })
    return { deliveries, firstAttempts: Promise.allSettled(first) }
  }

  /**
   * Whether the webhook may have taken `d` though it is not `delivered`: an attempt failed with no
   * answer (a timeout, a connection cut) after its request may have gone. Not when every attempt
   * was refused with a status, or failed before a connection was made (refused, no such host, no
   * route, a certificate not trusted): then the webhook has not got it.
   */
  mayHaveReached(d: Delivery): boolean {
    return d.status === 'delivered' || this.unanswered.has(d)
  }

  /** The delivery log, newest first. */
  deliveries(): Delivery[] {
    return [...this.log].reverse()
  }

  /**
   * Runs `first` (a delivery's first attempt) once the first attempt of the delivery made before it
   * for the same webhook has ended: made at once (a call crossing 50% and its limit), each on its
   * own connection, a slower first connection put "limit reached" before the 50% warning at the
   * webhook. Retries are not held back, nor do they hold back later alerts.
   */
  private inTurn(url: string, d: Delivery, first: () => Promise<void>): Promise<void> {
    const before = this.lastFirst.get(url)
    // Queued behind `before`: close() takes it out of `queued`, and then it is not tried.
    if (before) this.queued.add(d)
    const run = before ? before.then(() => (this.queued.delete(d) ? first() : undefined)) : first()
    const p: Promise<void> = run.finally(() => {
      if (this.lastFirst.get(url) === p) this.lastFirst.delete(url)
    })
    this.lastFirst.set(url, p)
    return p
  }

  private attempt(to: Address, body: string, d: Delivery): Promise<void> {
    const p = this.post(to, body, d).finally(() => this.running.delete(p))
    this.running.set(p, d)
    return p
  }

  private async post(to: Address, body: string, d: Delivery): Promise<void> {
    d.attempts++
    let asked: number | null = null
    this.unconnected.delete(d)
    try {
      const res = await request(to.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'burnrate-alerts', ...to.headers },
        body,
        dispatcher: this.opts.egress?.for(to.url),
        headersTimeout: this.opts.timeoutMs,
        bodyTimeout: this.opts.timeoutMs,
        signal: AbortSignal.any([AbortSignal.timeout(this.opts.timeoutMs), this.cut.signal]),
      })
      await res.body.dump()
      d.last_status = res.statusCode
      d.last_error = res.statusCode >= 200 && res.statusCode < 300 ? null : `HTTP ${res.statusCode}`
      if (res.statusCode === 429 || res.statusCode === 503) asked = retryAfter(oneHeader(res.headers['retry-after']))
    } catch (err) {
      d.last_status = null
      d.last_error = (err as Error)?.message ?? String(err)
      if (notConnected(err)) this.unconnected.add(d)
      else this.unanswered.add(d)
    }
    d.updated_at = new Date().toISOString()
    if (d.last_error === null) {
      d.status = 'delivered'
      this.settled(d)
      return
    }
    if (this.closed || d.attempts > this.opts.retries || this.abandoned.has(d)) {
      if (this.abandoned.has(d)) d.last_error = `${d.last_error}; ${ABANDONED}`
      d.status = 'failed'
      if (!this.closed) this.settled(d)
      return
    }
    // Doubled each time, up to the longest a timer can wait (a longer one fires at once); the
    // webhook's Retry-After when it asks for longer, up to MAX_RETRY_AFTER_MS.
    const backoff = Math.min(MAX_TIMER_MS, this.opts.backoffMs * 2 ** (d.attempts - 1))
    const wait = Math.max(backoff, Math.min(asked ?? 0, this.opts.maxRetryAfterMs ?? MAX_RETRY_AFTER_MS))
    this.retryAt(Date.now() + wait, to, body, d)
  }

  private settled(d: Delivery): void {
    try {
      this.opts.onSettled?.(d)
    } catch {
      // the listener's own failure: the delivery's outcome stands
    }
  }

  /** Tries `d` again at `due`, not before (a timer may fire a little early, and the webhook would refuse it again). */
  private retryAt(due: number, to: Address, body: string, d: Delivery): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer)
      if (this.closed) return
      if (Date.now() < due) this.retryAt(due, to, body, d)
      else void this.attempt(to, body, d)
    }, Math.max(1, due - Date.now()))
    timer.unref?.()
    this.timers.set(timer, d)
  }

  /**
   * Tries `d` no more (PostgreSQL: another instance took its claim over, and sends it): its retry
   * waiting, or its first attempt waiting its turn, is dropped, and an attempt under way is its
   * last. Ended so, it is failed (`onSettled` told).
   */
  abandon(d: Delivery): void {
    if (d.status !== 'pending' || this.closed) return
    this.abandoned.add(d)
    let dropped = this.queued.delete(d)
    for (const [t, x] of this.timers) {
      if (x !== d) continue
      clearTimeout(t)
      this.timers.delete(t)
      dropped = true
    }
    if (!dropped) return
    Object.assign(d, { status: 'failed', last_error: `${d.last_error ?? 'not sent'}; ${ABANDONED}`, updated_at: new Date().toISOString() })
    this.settled(d)
  }

  /**
   * Stops retrying (retries not yet due are dropped) and waits for attempts under way, CLOSE_WAIT_MS
   * at most (at shutdown). Returns the deliveries never sent: those whose retry was dropped, and
   * those whose attempt under way then failed with nothing sent (no retry follows it either): the
   * webhook refused it with a status, or no connection was made (refused, no such host). One cut or
   * failed without an answer is not among them: the webhook may have taken it.
   */
  async close(): Promise<Delivery[]> {
    this.closed = true
    // Retries not yet due, and first attempts still waiting for their turn (never tried).
    const dropped = [...this.timers.values(), ...this.queued]
    this.queued.clear()
    for (const t of this.timers.keys()) clearTimeout(t)
    this.timers.clear()
    // Not to be tried again: logged failed, not left pending as if a retry were still to come.
    const at = new Date().toISOString()
    for (const d of dropped) Object.assign(d, { status: 'failed', last_error: `${d.last_error ?? 'not sent'}; Burnrate shut down before the next attempt`, updated_at: at })
    if (this.running.size === 0) return dropped
    const underWay = [...this.running.values()]
    const timer = setTimeout(() => this.cut.abort(new Error('Burnrate shut down before the webhook answered')), CLOSE_WAIT_MS)
    await Promise.allSettled([...this.running.keys()])
    clearTimeout(timer)
    for (const d of underWay) if (d.status === 'failed' && (d.last_status !== null || this.unconnected.has(d))) dropped.push(d)
    return dropped
  }
}

function oneHeader(v: string | string[] | undefined): string | null {
  return Array.isArray(v) ? (v[0] ?? null) : (v ?? null)
}

/** Errors of a connection never made (undici's, and the system's under them): the request was not sent. */
const NOT_CONNECTED = new Set([
  'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN', 'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'CERT_HAS_EXPIRED', 'ERR_TLS_CERT_ALTNAME_INVALID',
])

/** Whether a failed attempt's error says no connection was made (./webhooks.ts `mayHaveReached`). */
function notConnected(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string' && NOT_CONNECTED.has(code)) return true
  }
  return false
}
