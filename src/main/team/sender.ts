import { AsyncResource } from 'node:async_hooks'
import type Database from 'better-sqlite3'
import type { IngestCall, TeamHealth } from '../../shared/api'
import type { Egress } from '../http/egress'
import type { Logger } from '../log'
import { backoffMs } from './backoff'
import { Backlog } from './backlog'
import { Batcher } from './batcher'
import { type SendOutcome, sendBatch } from './client'
import { bareUrl } from '../storage/url'
import { TeamCursor } from './cursor'
import { serverText } from './redact'

export interface SenderOptions {
  db: Database.Database
  /** The team server's base address as configured (credentials in it are never shown). */
  url: string
  token: string
  batchSize: number
  maxBackoffMs: number
  log: Logger
  /** Calls still in memory, not yet in the database (counted in the backlog). */
  pending?: () => number
  /** How to reach the team server (behind a proxy: upstream.proxy, HTTPS_PROXY); unset: directly. */
  egress?: Egress
}

/** Wait after a new call before sending, so calls made close together go in one batch. */
export const WAKE_DELAY_MS = 500
/** Look for calls that arrived without a wake-up (imports) this often when idle. */
export const IDLE_POLL_MS = 30_000

/**
 * Sends this Burnrate's recorded calls to a team server: every call after the durable cursor,
 * in batches, oldest first; the cursor moves only when the server has answered for a batch, so
 * nothing is skipped and a restart resumes. While the server is away or answers 5xx/429 the
 * batch is retried with exponential backoff and jitter (Retry-After honoured); the server's
 * idempotency by (member, id) makes a batch sent twice count once. Everything runs off the
 * proxy's path: a proxied call only wakes the sender.
 */
export class TeamSender {
  private readonly cursor: TeamCursor
  private readonly batcher: Batcher
  private readonly unacknowledged: Backlog
  private readonly endpoint: string
  readonly label: string
  private timer: NodeJS.Timeout | null = null
  private due = 0
  private running: Promise<void> | null = null
  /** A call was recorded while a send was under way: look again soon after it. */
  private again = false
  private stopped = false
  private failures = 0
  private retryAt: number | null = null
  private readonly abort = new AbortController()
  private readonly counts = { sent: 0, rejected: 0 }
  /** Calls per batch in this run: halved while the team server answers that a batch is too large (413). */
  private size: number
  private lastSentAt: number | null = null
  private lastError: string | null = null
  /**
   * The async context the sender was made in (start-up): a send woken by a call's recording is
   * timed from it, not from that proxied call's context, so its POST is not timed as the call's
   * request upstream (../metrics/upstream.ts).
   */
  private readonly outside = new AsyncResource('burnrate.team')

  constructor(private readonly opts: SenderOptions) {
    const base = bareUrl(opts.url)
    this.label = base
    this.endpoint = `${base}/api/ingest`
    this.size = opts.batchSize
    this.batcher = new Batcher(opts.db)
    this.unacknowledged = new Backlog(opts.db)
    this.cursor = new TeamCursor(opts.db, base, () => this.batcher.latestRevision())
  }

  start(): this {
    this.schedule(0)
    return this
  }

  /** A call was recorded or revised: send soon, unless a retry is already waiting (its backoff stands). */
  wake(): void {
    if (this.stopped || this.retryAt !== null) return
    if (this.running) this.again = true
    else this.outside.runInAsyncScope(() => this.schedule(WAKE_DELAY_MS, true))
  }

  /** Runs a send in `ms`; with `sooner`, only if that is earlier than the one already planned. */
  private schedule(ms: number, sooner = false): void {
    if (this.stopped) return
    const due = Date.now() + ms
    if (this.timer) {
      if (sooner && this.due <= due) return
      clearTimeout(this.timer)
    }
    this.due = due
    this.timer = setTimeout(() => {
      this.timer = null
      this.running ??= this.run().finally(() => {
        this.running = null
      })
    }, ms)
    this.timer.unref?.()
  }

  private async run(): Promise<void> {
    this.retryAt = null
    this.again = false
    this.size = this.opts.batchSize
    try {
      if (await this.sendAll()) this.schedule(this.again ? WAKE_DELAY_MS : IDLE_POLL_MS)
    } catch (err) {
      // (The local database could not be read, or the cursor not saved: tried again like a failed
      // send; a batch the team server already took is then counted there as duplicates.)
      this.retryLater({ kind: 'retry', error: `the local database is busy or unreadable: ${(err as Error)?.message ?? String(err)}`, retryAfterMs: null })
    }
  }

  private retryLater(out: Exclude<SendOutcome, { kind: 'ok' | 'too_large' }>): void {
    if (this.stopped) return
    this.failures++
    const wait = out.kind === 'retry' ? backoffMs(this.failures, this.opts.maxBackoffMs, out.retryAfterMs) : this.opts.maxBackoffMs
    if (this.lastError !== out.error) this.opts.log.warn(`team: ${out.error}; next try in ${Math.round(wait / 1000)} s`)
    this.lastError = out.error
    this.retryAt = Date.now() + wait
    this.schedule(wait)
  }

  /**
   * Sends batches until none is left (true) or one fails (false, a retry is scheduled): the new
   * calls first, then the calls sent before whose cost or tokens changed since (revisions).
   */
  private async sendAll(): Promise<boolean> {
    for (;;) {
      if (this.stopped) return false
      const batch = this.batcher.next(this.cursor.lastId, this.size)
      if (batch.calls.length > 0) {
        const sent = await this.send(batch.calls)
        if (sent === 'smaller') continue
        if (!sent) return false
      } else if (batch.more) {
        // Only calls ingested here (not sent on): passed, the event loop let in between.
        await new Promise((r) => setImmediate(r))
      }
      this.cursor.advance(batch.lastId)
      if (!batch.more) break
    }
    for (;;) {
      if (this.stopped) return false
      const batch = this.batcher.revised(this.cursor.revision, this.cursor.lastId, this.size)
      if (batch.calls.length > 0) {
        const sent = await this.send(batch.calls)
        if (sent === 'smaller') continue
        if (!sent) return false
      } else if (batch.more) await new Promise((r) => setImmediate(r))
      this.cursor.advanceRevision(batch.last)
      if (!batch.more) return true
    }
  }

  /**
   * Sends one batch; true once the team server answered for it (false: a retry is scheduled;
   * 'smaller': it was too large, send half as many calls). A single call too large for the team
   * server is skipped as refused: sending it again cannot help, and every later call waits on it.
   */
  private async send(calls: IngestCall[]): Promise<boolean | 'smaller'> {
    const out: SendOutcome = await sendBatch(this.endpoint, this.label, this.opts.token, calls, this.abort.signal, this.opts.egress?.for(this.endpoint))
    if (this.stopped) return false
    if (out.kind === 'too_large' && calls.length > 1) {
      this.size = Math.floor(calls.length / 2)
      return 'smaller'
    }
    if (out.kind === 'too_large') {
      this.counts.rejected++
      this.lastError = `${out.error} (call ${calls[0].id} alone; skipped)`
      this.opts.log.warn(`team: ${this.lastError}`)
      return true
    }
    if (out.kind !== 'ok') {
      this.retryLater(out)
      return false
    }
    const r = out.result
    this.failures = 0
    this.counts.sent += r.accepted + r.duplicates + r.revised
    this.counts.rejected += r.rejected.length
    this.lastSentAt = Date.now()
    if (r.rejected.length > 0) {
      // Sending them again cannot help: they are skipped, and said so.
      this.lastError = `the team server refused ${r.rejected.length} of ${calls.length} calls: ${serverText(String(r.rejected[0].error?.message), this.opts.token)}`
      this.opts.log.warn(`team: ${this.lastError}`)
    } else this.lastError = null
    return true
  }

  private backlog(): number {
    return this.unacknowledged.count(this.cursor.lastId, this.cursor.revision) + (this.opts.pending?.() ?? 0)
  }

  status(): TeamHealth {
    return {
      url: this.label,
      backlog: this.stopped ? 0 : this.backlog(),
      sent: this.counts.sent,
      rejected: this.counts.rejected,
      last_sent_at: this.lastSentAt === null ? null : new Date(this.lastSentAt).toISOString(),
      last_error: this.lastError,
      retry_at: this.retryAt === null ? null : new Date(this.retryAt).toISOString(),
    }
  }

  /** Stops sending (a request under way is abandoned; its calls are sent again next time). */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    this.abort.abort()
    await this.running?.catch(() => {})
  }
}
