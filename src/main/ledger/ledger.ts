import type Database from 'better-sqlite3'
import { BatchWriter } from './batch-writer'
import { CallKeys } from './call-keys'
import type { SideWrite } from './side-writes'
import { type CallNotices, readWithNotices } from './notices'
import type { CallRecord } from './record'
import { withoutNul } from './nul'
import { LedgerJournal } from './journal'
import type { LedgerOptions } from './ledger-options'
import { pruneStepOn } from './retention'
import { SpendTracker } from './spend'
import type { BatchTxHook, CallLedger, LedgerStatus, ThreadHook } from './types'
import { WriteHealth } from './write-health'
import { WriteQueue } from './write-queue'

export type { LedgerStatus, ThreadHook } from './types'
export type { LedgerOptions } from './ledger-options'

type Listener = (call: CallRecord) => void

/**
 * The write side of the ledger. `record()` is what the proxy calls when a call ends: it
 * updates the in-memory spend at once and queues the row; rows are written in one
 * transaction per batch, at most `flushIntervalMs` later, so recording never blocks a
 * response. If a write fails the batch stays queued (up to `maxPending`) and is retried.
 *
 * This is the facade: what is queued is ./write-queue.ts, how it is written ./batch-writer.ts
 * (write thread, retries, row by row), the state /api/health reads ./write-health.ts, and the
 * calls kept on disk while the database cannot be written ./journal.ts.
 */
export class Ledger implements CallLedger {
  readonly kind = 'sqlite' as const
  readonly spend: SpendTracker
  readonly status: LedgerStatus
  /** Whether the last `prune` step stopped before it looked at every old call (./retention.ts, `Pruned.more`). */
  pruneUnfinished = false
  private readonly health = new WriteHealth()
  /** What is recorded and not stored yet (./write-queue.ts). */
  private readonly queue: WriteQueue
  /** Keys for the calls whose write could be done twice (./call-keys.ts). */
  private readonly keys = new CallKeys()
  /** Looks a call key up (spill files read at start-up); prepared when first used. */
  private keyLookup: Database.Statement | null = null
  private readonly listeners = new Set<Listener>()
  /** The last notice of a call stored by another process that the spend loaded at start-up counts (./notices.ts). */
  private readonly spendThrough: number
  /** The notices of other processes' calls this server reads (readNotices). */
  private notices: CallNotices | null = null
  /** Where the calls waiting for an unwritable database are kept on disk (./journal.ts); none without `journalDir`. */
  private readonly journal: LedgerJournal | null
  /** Writes the queue in batches (./batch-writer.ts). */
  private readonly writer: BatchWriter

  constructor(
    readonly db: Database.Database,
    private readonly opts: LedgerOptions,
  ) {
    this.status = this.health.status
    this.queue = new WriteQueue(this.status)
    this.spend = new SpendTracker(opts.timezone)
    this.spendThrough = readWithNotices(db, () => this.spend.load(db)).through
    this.journal = opts.journalDir
      ? new LedgerJournal(
          opts.journalDir,
          opts.log,
          opts.flushIntervalMs,
          (rows) => this.keys.give(rows),
          () => this.queue.journalCalls(),
          () => this.queue.journalSide(),
          // On disk after all not: an append that held them failed.
          (n) => this.health.notOnDisk(n),
          // On disk now: the append that held them has ended.
          (n) => this.health.nowOnDisk(n),
        )
      : null
    this.writer = new BatchWriter(db, opts, this.queue, this.health, this.keys, this.journal)
  }

  /**
   * Runs `hook` inside every batch's write transaction, after its rows are inserted
   * (rollups kept in step with the calls). A hook that throws fails the whole batch.
   */
  onBatch(hook: (rows: readonly CallRecord[]) => void, onThread?: ThreadHook): void {
    this.writer.onBatch(hook, onThread)
  }

  /**
   * Counts in the spend the calls other processes store in this file from now on (`burnrate
   * import` beside this server). Only a server reads the notices: they are deleted once read.
   */
  readNotices(notices: CallNotices): () => void {
    this.notices = notices
    return notices.read({
      through: this.spendThrough,
      take: (calls) => {
        for (const c of calls) this.spend.addCall(c)
      },
      moved: (moves) => {
        for (const m of moves) this.spend.adjust(m.api_key_hash, m.ts, m.delta)
      },
    })
  }

  catchUp(): void {
    try {
      this.notices?.drain()
    } catch {
      // a busy file: the notices are read at the next tick, as before
    }
  }

  /** A PostgreSQL ledger's hook: the SQLite ledger's batches run `onBatch` hooks instead, so it is never called here. */
  onBatchTx(_hook: BatchTxHook): void {}

  /**
   * Stores these rows (./side-writes.ts: a key's prefix patterns, a background response's hold
   * kept or let go) in the transaction of the next batch, on the thread that writes it: never a
   * write of their own on a call's way, nor one that could wait on the write thread's lock. A call
   * recorded after this is in that batch or a later one, so a call on disk has its key's patterns
   * on disk too. While the database cannot be written they are journalled with the waiting calls
   * (./journal.ts), so a process killed meanwhile loses neither.
   */
  keepWithNextBatch(writes: readonly SideWrite[]): void {
    if (this.writer.closed || writes.length === 0) return
    for (const w of writes) this.queue.side.push(w)
    this.writer.schedule(this.opts.flushIntervalMs)
    if (!this.status.writable) this.journal?.soon()
  }

  /**
   * Takes a spill file's rows the database could not take at start-up (../reliability/spill.ts):
   * they are written before anything recorded since, at the next write that succeeds, and then
   * `stored` is told (it removes the file); `kept` is told the rows still waiting when only some
   * were written (it rewrites the file with them). Their spend is the caller's to count; at a
   * stop they stay in their file, never in a new one.
   */
  restore(rows: CallRecord[], side: SideWrite[], stored: () => void, kept: (rows: CallRecord[], side: SideWrite[]) => void): void {
    if (this.writer.closed || (rows.length === 0 && side.length === 0)) return
    this.queue.restored.add(rows, side, stored, kept)
    this.queue.countPending()
    this.writer.schedule(this.health.retryMs || this.opts.flushIntervalMs)
  }

  /**
   * What is recorded but not on disk: the spill files' rows still waiting, then the queue (after a
   * failed `flush`, nothing is on the write thread). The budget meters count these calls beside
   * those they read from the database, and the holds among these rows beside those on disk.
   */
  unwritten(): { calls: CallRecord[]; side: SideWrite[] } {
    return this.queue.unwritten()
  }

  /** True while batches due on the timer go to a write thread (started for them; none has failed). */
  get writesOnThread(): boolean {
    return this.writer.threads.usable
  }

  /** True while a write thread is running (from the first batch until it has been idle for `threadIdleMs`). */
  get threadRunning(): boolean {
    return this.writer.threads.running !== null
  }

  /** Called for every recorded call, as soon as it is recorded (before it is on disk). */
  onCall(listener: Listener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  record(recorded: CallRecord): void {
    if (this.writer.closed) throw new Error('ledger is closed')
    // As PostgreSQL stores it (./nul.ts), for the meters and listeners too.
    const call = withoutNul(recorded)
    // Money only: a subscription call's cost is its API-equivalent value, not spend (budgets ignore it).
    this.spend.addCall(call)
    if (this.queue.calls.length >= this.opts.maxPending) {
      const gone = this.queue.dropOldest(this.opts.maxPending)
      // Those in the journal are not lost: the next start stores them.
      const left = this.journal?.left(gone) ?? { kept: 0, inFlight: 0 }
      this.health.leftMemory(gone.length, left.kept, left.inFlight)
    }
    this.queue.calls.push(call)
    this.queue.countPending()
    this.writer.schedule(this.opts.flushIntervalMs)
    // Kept on disk within a tick while the database refuses writes (a kill meanwhile loses nothing).
    if (!this.status.writable) this.journal?.soon()
    for (const l of this.listeners) {
      try {
        l(call)
      } catch {
        // a listener's failure is its own; recording goes on
      }
    }
  }

  /** Writes every queued call now. Returns false when the database refused the write. */
  flush(): boolean {
    return this.writer.flush()
  }

  /**
   * Writes every queued call and resolves once they are stored (false when the store refused).
   * Readers await this before answering, so a call that ended is in every answer; with
   * PostgreSQL the write is asynchronous, which is why readers use this and not `flush()`.
   */
  flushed(): Promise<boolean> {
    return this.writer.flushed()
  }

  /**
   * Deletes up to `limit` of the oldest calls older than `before` (ms) that the rollups include
   * (retention; see retention.ts), on the connection that writes: the write thread's while it
   * is in use, else this one. Resolves to how many it deleted.
   */
  prune(before: number, limit: number, team: string | null = null): Promise<number> {
    const t = this.writer.closed ? null : this.writer.threads.use()
    if (t) {
      return new Promise((resolve, reject) => {
        t.send({ type: 'prune', before, limit, team }, (r) => {
          this.writer.threads.idleLater()
          if (!r.ok) return reject(Object.assign(new Error(r.message ?? 'prune failed'), { code: r.code }))
          this.pruneUnfinished = r.more === true
          resolve(r.deleted ?? 0)
        })
      })
    }
    return new Promise((resolve) => {
      const r = pruneStepOn(this.db, before, limit, team)
      this.pruneUnfinished = r.more
      resolve(r.deleted)
    })
  }

  /**
   * Hands over every queued call and forgets it (to keep it elsewhere when the database stays
   * unwritable at shutdown), each with a key: kept in a spill file and written at a start after a
   * kill that left the file, it is stored once.
   */
  takePending(): CallRecord[] {
    this.writer.landInFlight()
    const rows = this.queue.takeCalls()
    this.keys.give(rows)
    return rows
  }

  /**
   * The calls of `rows` whose key is not stored yet (a spill file read at start-up: a kill after
   * its calls were written and before it was removed leaves it). A call without a key is kept.
   */
  notStored(rows: CallRecord[]): CallRecord[] {
    this.keyLookup ??= this.db.prepare('SELECT 1 FROM calls WHERE call_key = ?').pluck()
    const lookup = this.keyLookup
    return rows.filter((r) => !r.call_key || lookup.get(r.call_key) === undefined)
  }

  /**
   * A stop kept every call still waiting in a spill file of its own: the journal is removed (it
   * stays when some of its calls left memory: they are in it only), and no more is appended.
   */
  dropJournal(): void {
    this.journal?.drop()
  }

  /**
   * Resolves once the journal's file work is done (an append still opening or writing its file at
   * the stop, the removal of a file no longer needed): a clean stop awaits it after `close` and
   * the stop's spill file, so it returns with the data folder holding exactly what the next start reads.
   */
  journalIdle(): Promise<void> {
    return this.journal?.idle() ?? Promise.resolve()
  }

  /** The journal's file holding those of `rows` (and of `side`) it has (./journal.ts), and how many. */
  inJournal(rows: readonly CallRecord[], side: readonly SideWrite[] = []): { file: string | null; count: number; side: number } {
    const j = this.journal
    if (!j) return { file: null, count: 0, side: 0 }
    let count = 0
    for (const r of rows) if (j.has(r)) count++
    let sideCount = 0
    for (const w of side) if (j.has(w)) sideCount++
    return { file: j.file, count, side: sideCount }
  }

  /** Hands over the rows kept for the next batch (key patterns, holds; after `takePending`) and forgets them. */
  takeSide(): SideWrite[] {
    this.writer.landInFlight()
    return this.queue.takeSide()
  }

  /** Flushes what is queued and stops accepting calls. The database stays open (its owner closes it). */
  close(): boolean {
    // What the last flush cannot write is kept by the stop (../reliability/spill.ts keepPending).
    this.journal?.close()
    const ok = this.writer.flush()
    // All stored: the journal (closed, no more appends) is not needed at the next start.
    if (ok) this.journal?.stored()
    this.writer.close()
    return ok
  }
}
