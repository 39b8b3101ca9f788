import { silentLogger, type Logger } from '../../log'
import { migratePostgres } from '../../storage/postgres-migrations'
import type { SqlStore } from '../../storage/sql'
import { withoutNul } from '../nul'
import type { CallRecord } from '../record'
import { SpendTracker } from '../spend'
import type { BatchTxHook, CallLedger, LedgerStatus } from '../types'
import { Availability } from './availability'
import { describeError, type PgLedgerOptions, type PgStorageStatus } from './options'
import { PgPruner } from './prune'
import { PendingQueue } from './queue'
import { Spill } from './spill'
import { FlushWaiters } from './waiters'
import { writeBatch } from './write-batch'

export type { PgLedgerOptions, PgStorageStatus } from './options'

/**
 * Calls that have waited this long to be written (PostgreSQL slow to take a batch, or still being
 * prepared at start-up) are appended to the spill journal as when it is away; removed once stored.
 */
export const JOURNAL_AFTER_MS = 250

/**
 * The ledger's write side on PostgreSQL. `record()` never waits: it counts the spend, gives the
 * call a unique key and queues it. A writer, one pass at a time, writes the queue in batches (one
 * INSERT … SELECT FROM unnest per batch, in one transaction with the batch hooks) at most
 * `flushIntervalMs` after a call is recorded. A batch sent again after a lost COMMIT answer
 * inserts nothing twice (ON CONFLICT on the call key).
 *
 * While PostgreSQL is away the queue stays in memory (up to `maxPending`) and is appended to a
 * spill file every tick, so a killed process leaves its calls on disk; so is it while calls wait
 * longer than JOURNAL_AFTER_MS (PostgreSQL slow, or start-up not done). When PostgreSQL answers
 * again the queue is written and the spill file removed (or, if calls had to leave memory, read
 * back and written first). Spill files found at start-up (a killed or stopped instance's) are
 * written before the spend is read, so each call counts once, and then removed.
 *
 * The parts: the queue (queue.ts), one batch's transaction (write-batch.ts, insert.ts), the spill
 * files (spill.ts, journal.ts), whether PostgreSQL answers (availability.ts) and the `flushed()`
 * waiters (waiters.ts); this class schedules the writer's passes and stops it.
 */
export class PgLedger implements CallLedger {
  readonly kind = 'postgres' as const
  readonly writesOnThread = false
  readonly spend: SpendTracker
  readonly status: LedgerStatus = { writable: true, pending: 0, dropped: 0, last_error: null }
  readonly storage: PgStorageStatus = { reachable: false, ready: false, spilled: 0, spill_files: 0, last_error: null }
  private readonly queue = new PendingQueue(this.status)
  private timer: NodeJS.Timeout | null = null
  private writing: Promise<void> | null = null
  /** When the writer last started a pass or finished a batch. */
  private progressAt = 0
  private closed = false
  private closing: Promise<boolean> | null = null
  private readonly log: Logger
  private readonly batchRows: number
  private readonly link: Availability
  private readonly spill: Spill
  private readonly waiters = new FlushWaiters()
  private readonly hooks: BatchTxHook[] = []
  private readonly listeners = new Set<(call: CallRecord) => void>()
  private readonly pruner: PgPruner

  constructor(
    readonly store: SqlStore,
    private readonly opts: PgLedgerOptions,
  ) {
    this.spend = new SpendTracker(opts.timezone)
    this.pruner = new PgPruner(store)
    this.log = opts.log ?? silentLogger
    this.batchRows = opts.batchRows ?? 1000
    this.link = new Availability(this.status, this.storage, this.log, opts.secret)
    this.spill = new Spill(this.queue, this.status, this.storage, {
      dataDir: opts.dataDir,
      log: this.log,
      secret: opts.secret,
      batchRows: this.batchRows,
      writeRows: (rows) => this.writeRows(rows),
      away: () => this.link.away,
      closed: () => this.closed,
    })
  }

  /** Starts the first pass (migrate, write earlier spill files, load spend); returns at once. */
  start(): this {
    this.startPass()
    return this
  }

  onBatch(): void {
    // SQLite's synchronous hooks: PostgreSQL batches run `onBatchTx` hooks.
  }

  onBatchTx(hook: BatchTxHook): void {
    this.hooks.push(hook)
  }

  onCall(listener: (call: CallRecord) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  record(recorded: CallRecord): void {
    if (this.closed) throw new Error('ledger is closed')
    // Without NUL bytes, which PostgreSQL text cannot hold (../nul.ts): the meters and listeners see the row it stores.
    const call = withoutNul(recorded)
    this.spend.addCall(call)
    if (this.queue.length >= this.opts.maxPending) this.dropOldest()
    // Listeners get the queued row: its key tells budgets/index.ts whether a call it counted is in
    // what a reload read from PostgreSQL.
    const row = this.queue.add(call)
    this.schedule(this.opts.flushIntervalMs)
    for (const l of this.listeners) {
      try {
        l(row)
      } catch {
        // a listener's failure is its own; recording goes on
      }
    }
  }

  /** Memory is full: the oldest calls leave it (1% of the bound at once); those not on disk are lost and counted. */
  private dropOldest(): void {
    const n = Math.max(1, Math.floor(this.opts.maxPending / 100))
    const gone = this.queue.dropOldest(n)
    // Those on disk are counted there (`left_on_disk`, until the journal holding them is written back).
    const lost = this.spill.leftMemory(gone)
    if (lost > 0) {
      // As the SQLite ledger counts them: the log tells these apart from rows PostgreSQL refused
      // (`last_drop`). `last_error` stays why PostgreSQL cannot be written (it may answer: calls
      // recorded faster than written), as on SQLite.
      this.status.dropped += lost
      this.status.overflowed = (this.status.overflowed ?? 0) + lost
    }
  }

  flush(): boolean {
    if (this.timer) {
      clearTimeout(this.timer)
      this.timer = null
    }
    if (!this.writing) this.startPass()
    return this.status.writable
  }

  async flushed(): Promise<boolean> {
    const target = this.queue.lastSeq
    if (this.storage.ready && this.queue.writtenThrough(target) && !this.writing) return true
    return new Promise<boolean>((resolve) => {
      this.waiters.add(target, resolve)
      this.flush()
    })
  }

  /**
   * Retention on PostgreSQL, in bounded steps (./prune.ts): the rollups of a call are written in
   * its batch's transaction, so every stored call is already in them; identity ids are never
   * handed out again. A team member's last call is kept (KEEPS_MEMBERS_LAST), and the calls of a
   * session still in use (KEEPS_LIVE_SESSIONS).
   */
  prune(before: number, limit: number): Promise<number> {
    return this.pruner.step(before, limit)
  }

  /** Whether the last `prune` step stopped before it looked at every old call (the next one comes soon). */
  get pruneUnfinished(): boolean {
    return this.pruner.more
  }

  /** The calls recorded and not yet stored (a write under way or failed included), oldest first; at most `ledger.max_pending`. */
  queuedCalls(): readonly CallRecord[] {
    return this.queue.rows()
  }

  takePending(): CallRecord[] {
    return this.queue.take()
  }

  /**
   * For an exit that cannot wait for `close` (a second signal): what is queued is not waited for
   * in PostgreSQL but kept in the spill journal, written at the next start (once: every call has
   * its key, so one a write under way stored too is not stored twice). Then stops.
   */
  keepQueued(): Promise<void> {
    this.closed = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    return this.keepRest('exiting before they were written to PostgreSQL')
  }

  /** Writes what is queued; if PostgreSQL is away, puts it in the spill file. Then stops. */
  close(): Promise<boolean> {
    this.closing ??= this.shutdown()
    return this.closing
  }

  private async shutdown(): Promise<boolean> {
    this.closed = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    // A write PostgreSQL does not answer must not hold the stop: its calls go to the spill file.
    const limit = this.opts.closeWaitMs ?? 10_000
    await within(this.writing, limit)
    if (!this.writing && (this.queue.length > 0 || !this.storage.ready || this.spill.hasWork)) {
      // One last attempt (PostgreSQL may be back); what it cannot write goes to the spill file.
      this.link.retryAt = 0
      this.startPass()
      await within(this.writing, limit)
    }
    const ok = this.queue.length === 0 && this.storage.ready
    await this.keepRest()
    this.waiters.failAll()
    return ok
  }

  /**
   * What is still queued to the spill file (Spill.keepRest), waited for while bytes keep reaching
   * it, and at most `keepWaitMs` past the stop or the last byte written: a disk that never answers
   * (a hung network mount) must not hold the stop, nor a second signal's exit behind it, up for
   * good, as on SQLite (../../server/journal-idle.ts); a slow one that works (thousands of calls
   * queued) takes them all (bounded from the stop alone, the process exited with them half
   * written). Past that the stop goes on, and says how many calls were not on disk yet.
   */
  private async keepRest(why?: string): Promise<void> {
    const limit = this.opts.keepWaitMs ?? 10_000
    const keeping = this.spill.keepRest(why)
    for (let seen = this.spill.written; !(await endsWithin(keeping, limit)); seen = this.spill.written) {
      if (this.spill.written !== seen) continue
      this.log.error(
        `the spill file's writes had not ended ${limit / 1000} s after the stop or its last byte written (a disk that does not answer); stopping without them: ${this.spill.notOnDisk} call(s) not on disk yet may be lost`,
      )
      return
    }
  }

  private schedule(ms: number): void {
    if (this.timer || this.closed) return
    this.timer = setTimeout(this.due, ms)
  }

  private readonly due = (): void => {
    this.timer = null
    if (this.writing && !this.link.away && Date.now() - this.progressAt > (this.opts.stallMs ?? 10_000)) {
      this.markAway(new Error('PostgreSQL has not answered a write for a while'), false)
    }
    // Away, or slow (calls have waited past JOURNAL_AFTER_MS: a batch PostgreSQL is slow to take,
    // or the schema and spend still being prepared at start-up): the calls not on disk yet go to
    // the spill journal, so a process killed meanwhile loses only the last moment's calls.
    if (this.link.away || this.queue.oldestWait(Date.now()) > JOURNAL_AFTER_MS) this.spill.spill()
    if (!this.writing && Date.now() >= this.link.retryAt) this.startPass()
    // Ticks go on while a pass runs, so a write that hangs or calls that wait are seen (above).
    this.reschedule()
  }

  private reschedule(): void {
    if (this.closed) return
    const work = this.queue.length > 0 || !this.storage.ready || this.spill.hasWork
    if (!work) return
    // Away: a tick every flush interval still spills what is new; the next attempt waits for retryAt.
    const tick = this.opts.flushIntervalMs
    this.schedule(this.link.away && !this.writing ? Math.min(tick, Math.max(1, this.link.retryAt - Date.now())) : tick)
  }

  private startPass(): void {
    if (this.writing) return
    this.progressAt = Date.now()
    this.writing = this.pass().then((ok) => {
      this.writing = null
      this.settleWaiters(ok)
      this.reschedule()
    })
  }

  /** One writer pass: everything queued, then whatever spill files wait. False when PostgreSQL is away. */
  private async pass(): Promise<boolean> {
    try {
      if (!this.storage.ready) await this.prepare()
      while (this.queue.length > 0) {
        const batch = this.queue.head(this.batchRows)
        await this.writeRows(batch.map((e) => e.row))
        this.link.reached()
        this.queue.removeThrough(batch[batch.length - 1].seq)
        this.progressAt = Date.now()
        this.settleWaiters(true, false)
        // A pass under steady load may not end for long: the journal goes as soon as all of it is stored.
        if (this.spill.journaling) await this.spill.finishJournal()
      }
      await this.spill.finishJournal()
      await this.spill.writeBacklog()
      this.link.reached()
      return true
    } catch (err) {
      this.markAway(err, true)
      return false
    }
  }

  /** Before the first write: the schema, the calls earlier runs spilled, then the spend already stored. */
  private async prepare(): Promise<void> {
    await (this.opts.migrate ?? migratePostgres)(this.store)
    this.link.reached()
    await this.spill.writeEarlier()
    await this.spend.loadStore(this.store)
    this.storage.ready = true
  }

  /**
   * One batch in one transaction; a row PostgreSQL refuses for itself is dropped and counted, the
   * others written. Written: PostgreSQL answers, and `last_error` says why this batch dropped a row,
   * or nothing (as the SQLite ledger's after each batch).
   */
  private async writeRows(rows: CallRecord[]): Promise<void> {
    let dropError: string | null = null
    await writeBatch(this.store, this.hooks, rows, (err) => {
      const why = describeError(err, this.opts.secret)
      this.status.dropped++
      dropError = `a call could not be written and was dropped: ${why}`
      this.status.last_drop = `PostgreSQL refused them: ${why}`
    })
    this.link.reached()
    this.status.last_error = dropError
  }

  private markAway(err: unknown, failed: boolean): void {
    this.link.markAway(err, failed)
    this.spill.spill()
  }

  private settleWaiters(ok: boolean, final = true): void {
    const again = this.waiters.settle(ok, final, (seq) => this.storage.ready && this.queue.writtenThrough(seq))
    // Calls recorded after the pass ended that a waiter counts on: another pass now.
    if (again && !this.closed) queueMicrotask(() => this.startPass())
  }
}

/** Whether `p` settles within `ms` (its rejection is thrown). */
async function endsWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([p.then(() => true), new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)))])
  } finally {
    clearTimeout(timer)
  }
}

/** Waits for `p`, but no longer than `ms`. */
async function within(p: Promise<unknown> | null, ms: number): Promise<void> {
  if (p) await endsWithin(p, ms)
}
