import type Database from 'better-sqlite3'
import { isDatabaseProblem } from '../reliability/rows'
import { CallKeys } from './call-keys'
import { INSERT_KEYED_CALL_SQL, insertKeyedCalls } from './columns'
import { type SideWrite, sideWriter } from './side-writes'
import { type CallNotices, readWithNotices } from './notices'
import type { CallRecord } from './record'
import { withoutNul } from './nul'
import { writeOneByOne } from './one-by-one'
import { RestoredRows } from './restored'
import { BatchInFlight } from './batch-in-flight'
import { LedgerJournal } from './journal'
import type { Logger } from '../log'
import { pruneStepOn } from './retention'
import { SpendTracker } from './spend'
import type { BatchTxHook, CallLedger, LedgerStatus, ThreadHook } from './types'
import { THREAD_IDLE_MS, ThreadKeeper } from './thread-keeper'

export type { LedgerStatus, ThreadHook } from './types'

export interface LedgerOptions {
  /** Longest wait before a recorded call is written (ms). */
  flushIntervalMs: number
  /** Calls held in memory while the database cannot be written. */
  maxPending: number
  timezone: string
  /**
   * The built write thread (out/main/ledger-worker.js). When given, batches due on the timer are
   * written on that thread while the database is writable; `flush()` still writes (and waits) on
   * the caller's thread, and every failure is handled there as without it. The thread starts
   * with the first batch (an idle server holds no thread) and ends once it has had nothing to
   * do for `threadIdleMs`; the next batch starts it again.
   */
  writeThread?: URL | string
  /** How long the write thread may sit idle before it ends (default 30 s). */
  threadIdleMs?: number
  /** The data folder: while the database cannot be written, the calls waiting are journalled there (./journal.ts). */
  journalDir?: string
  log?: Logger
}

/** Longest wait for the write thread's answer to the batch it is writing, before it is given up. */
const LAND_WAIT_MS = 10_000

type Listener = (call: CallRecord) => void

/**
 * The write side of the ledger. `record()` is what the proxy calls when a call ends: it
 * updates the in-memory spend at once and queues the row; rows are written in one
 * transaction per batch, at most `flushIntervalMs` later, so recording never blocks a
 * response. If a write fails the batch stays queued (up to `maxPending`) and is retried.
 */
export class Ledger implements CallLedger {
  readonly kind = 'sqlite' as const
  readonly spend: SpendTracker
  private pending: CallRecord[] = []
  /** Rows other than calls to store with the next batch (`keepWithNextBatch`). */
  private side: SideWrite[] = []
  /** Spill files' rows the database could not take at start-up, written before everything else (./restored.ts). */
  private readonly restored = new RestoredRows()
  private timer: NodeJS.Timeout | null = null
  private readonly insert: Database.Statement
  /** Keys for the calls whose write could be done twice (./call-keys.ts). */
  private readonly keys = new CallKeys()
  /** Looks a call key up (spill files read at start-up); prepared when first used. */
  private keyLookup: Database.Statement | null = null
  private readonly writeBatch: (rows: CallRecord[], side?: readonly SideWrite[]) => void
  private readonly listeners = new Set<Listener>()
  private readonly batchHooks: ((rows: readonly CallRecord[]) => void)[] = []
  private retryMs = 0
  private closed = false
  /** The write thread, started for a batch and ended once idle (./thread-keeper.ts). */
  private readonly threads: ThreadKeeper
  /** Hooks only this thread can run: while there are any, no batch goes to the write thread. */
  private ownHooks = 0
  /** The batch the write thread is writing (./batch-in-flight.ts). */
  private readonly inFlight = new BatchInFlight()
  readonly status: LedgerStatus = { writable: true, pending: 0, dropped: 0, last_error: null }
  /** The last notice of a call stored by another process that the spend loaded at start-up counts (./notices.ts). */
  private readonly spendThrough: number
  /** The notices of other processes' calls this server reads (readNotices). */
  private notices: CallNotices | null = null
  /** Where the calls waiting for an unwritable database are kept on disk (./journal.ts); none without `journalDir`. */
  private readonly journal: LedgerJournal | null

  constructor(
    readonly db: Database.Database,
    private readonly opts: LedgerOptions,
  ) {
    this.spend = new SpendTracker(opts.timezone)
    this.spendThrough = readWithNotices(db, () => this.spend.load(db)).through
    this.insert = db.prepare(INSERT_KEYED_CALL_SQL)
    const writeSide = sideWriter(db)
    const values: unknown[] = []
    this.writeBatch = db.transaction((rows: CallRecord[], side: readonly SideWrite[] = []) => {
      // A call whose key is stored already is not inserted again, nor added to the rollups again.
      const inserted = insertKeyedCalls(this.insert, rows, values)
      writeSide(side)
      for (const hook of this.batchHooks) hook(inserted)
    })
    this.journal = opts.journalDir
      ? new LedgerJournal(
          opts.journalDir,
          opts.log,
          opts.flushIntervalMs,
          (rows) => this.keys.give(rows),
          () => (this.inFlight.rows ?? []).concat(this.pending),
          () => this.inFlight.side.concat(this.side),
          (n) => {
            // On disk after all not: an append that held them failed.
            this.status.left_on_disk = Math.max(0, (this.status.left_on_disk ?? 0) - n)
            this.status.dropped += n
            this.status.overflowed = (this.status.overflowed ?? 0) + n
          },
        )
      : null
    this.threads = new ThreadKeeper(db.memory ? undefined : opts.writeThread, db.name, opts.threadIdleMs ?? THREAD_IDLE_MS, () => this.inFlight.busy)
  }

  /**
   * Runs `hook` inside every batch's write transaction, after its rows are inserted
   * (rollups kept in step with the calls). A hook that throws fails the whole batch.
   */
  onBatch(hook: (rows: readonly CallRecord[]) => void, onThread?: ThreadHook): void {
    this.batchHooks.push(hook)
    if (!onThread || !this.threads.addHook(onThread)) this.ownHooks++
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
    if (this.closed || writes.length === 0) return
    for (const w of writes) this.side.push(w)
    this.schedule(this.opts.flushIntervalMs)
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
    if (this.closed || (rows.length === 0 && side.length === 0)) return
    this.restored.add(rows, side, stored, kept)
    this.countPending()
    this.schedule(this.retryMs || this.opts.flushIntervalMs)
  }

  /**
   * What is recorded but not on disk: the spill files' rows still waiting, then the queue (after a
   * failed `flush`, nothing is on the write thread). The budget meters count these calls beside
   * those they read from the database, and the holds among these rows beside those on disk.
   */
  unwritten(): { calls: CallRecord[]; side: SideWrite[] } {
    return {
      calls: this.restored.calls().concat(this.inFlight.rows ?? [], this.pending),
      side: this.restored.side().concat(this.inFlight.side, this.side),
    }
  }

  /** True while batches due on the timer go to a write thread (started for them; none has failed). */
  get writesOnThread(): boolean {
    return this.threads.usable
  }

  /** True while a write thread is running (from the first batch until it has been idle for `threadIdleMs`). */
  get threadRunning(): boolean {
    return this.threads.running !== null
  }

  /** Called for every recorded call, as soon as it is recorded (before it is on disk). */
  onCall(listener: Listener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  record(recorded: CallRecord): void {
    if (this.closed) throw new Error('ledger is closed')
    // As PostgreSQL stores it (./nul.ts), for the meters and listeners too.
    const call = withoutNul(recorded)
    // Money only: a subscription call's cost is its API-equivalent value, not spend (budgets ignore it).
    this.spend.addCall(call)
    if (this.pending.length >= this.opts.maxPending) {
      // Drop the oldest in blocks of 1% of the bound: shift() copies the whole queue (0.2 ms at
      // 100,000 held calls), which would slow every call for as long as the database is down.
      const n = Math.max(1, Math.floor(this.opts.maxPending / 100))
      const gone = this.pending.splice(0, n)
      // Those in the journal are not lost: the next start stores them.
      const onDisk = this.journal?.left(gone) ?? 0
      if (onDisk > 0) this.status.left_on_disk = (this.status.left_on_disk ?? 0) + onDisk
      this.status.dropped += gone.length - onDisk
      this.status.overflowed = (this.status.overflowed ?? 0) + gone.length - onDisk
    }
    this.pending.push(call)
    this.countPending()
    this.schedule(this.opts.flushIntervalMs)
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

  private schedule(ms: number): void {
    if (this.timer || this.closed) return
    this.timer = setTimeout(() => {
      this.timer = null
      this.flushDue()
    }, ms)
  }

  private countPending(): void {
    this.status.pending = this.pending.length + this.inFlight.count + this.restored.count
  }

  /**
   * A batch due on the timer: to the write thread when it can take it (starting one if none
   * runs: the batch waits in its queue while it opens the database), else written here.
   */
  private flushDue(): void {
    if (this.inFlight.busy) {
      this.schedule(this.opts.flushIntervalMs)
      return
    }
    const idle = this.pending.length === 0 && this.side.length === 0 && this.restored.empty
    // Spill files' rows waiting are written here, before the queue (./restored.ts).
    const t = this.ownHooks > 0 || !this.status.writable || idle || !this.restored.empty ? null : this.threads.use()
    if (!t) {
      this.flush()
      return
    }
    const rows = this.pending
    const side = this.side
    this.pending = []
    this.side = []
    // Keyed: if the thread is given up after it committed them (no answer in time, or it died),
    // writing them again here inserts nothing.
    this.keys.give(rows)
    this.inFlight.send(t, rows, side, (ok, rows, side) => {
      this.threads.idleLater()
      if (ok) {
        this.status.writable = true
        this.status.last_error = null
        this.retryMs = 0
        this.countPending()
        this.journal?.settle()
        return
      }
      // Written here instead, where a refusal is handled as always (kept and retried, or row by row).
      this.pending = rows.concat(this.pending)
      this.side = side.concat(this.side)
      this.countPending()
      // (Inside landInFlight the flush under way goes on to write them.)
      if (!this.closed && !this.inFlight.landing) this.flush()
    })
  }

  /** Waits for the batch the write thread is writing (a synchronous flush must find it written). */
  private landInFlight(): void {
    const thread = this.threads.running
    if (!thread) return
    const back = this.inFlight.land(thread, LAND_WAIT_MS)
    if (!back) return
    // No answer: stop using the thread, and keep the batch to be written here.
    this.threads.giveUp()
    this.pending = back.rows.concat(this.pending)
    this.side = back.side.concat(this.side)
    this.countPending()
  }

  /** Writes every queued call now. Returns false when the database refused the write. */
  flush(): boolean {
    if (this.timer) {
      clearTimeout(this.timer)
      this.timer = null
    }
    this.landInFlight()
    if (!this.restored.empty) {
      let dropError: string | null = null
      const err = this.restored.write(this.writeBatch, (n, e) => {
        this.status.dropped += n
        this.status.last_drop = `the database refused them: ${describe(e)}`
        dropError = `a call could not be written and was dropped: ${describe(e)}`
      })
      this.countPending()
      if (err) return this.refused(err)
      this.status.writable = true
      this.status.last_error = dropError
      this.retryMs = 0
    }
    if (this.pending.length === 0 && this.side.length === 0) {
      this.journal?.settle()
      return true
    }
    const rows = this.pending
    const side = this.side
    this.side = []
    try {
      this.writeBatch(rows, side)
    } catch (err) {
      this.side = side.concat(this.side)
      // A row the database refuses must not hold back the others: write them one by one.
      if (!isDatabaseProblem(err)) return this.writeOneByOne(rows)
      return this.refused(err)
    }
    // Calls recorded while the batch was written (none: the write is synchronous) stay queued.
    this.pending = this.pending === rows ? [] : this.pending.slice(rows.length)
    this.countPending()
    this.status.writable = true
    this.status.last_error = null
    this.retryMs = 0
    this.journal?.settle()
    return true
  }

  /** The database refused a write (locked, full, read-only): what was to be written stays, and is tried again later. */
  private refused(err: unknown): false {
    this.status.writable = false
    this.status.last_error = describe(err)
    this.retryMs = Math.min(Math.max(this.retryMs * 2, 100), 5000)
    this.schedule(this.retryMs)
    this.journal?.soon()
    return false
  }

  /** The batch refused for one of its rows: written row by row (./one-by-one.ts), the rest kept while the database is the problem. */
  private writeOneByOne(rows: CallRecord[]): boolean {
    const side = this.side
    this.side = []
    const r = writeOneByOne(this.writeBatch, rows, side)
    this.side = r.keptSide.concat(this.side)
    this.status.dropped += r.dropped
    if (r.dropError) {
      this.status.last_error = `a call could not be written and was dropped: ${describe(r.dropError)}`
      this.status.last_drop = `the database refused them: ${describe(r.dropError)}`
    }
    const i = r.written
    this.pending = this.pending === rows ? rows.slice(i) : [...rows.slice(i), ...this.pending.slice(rows.length)]
    this.countPending()
    if (i < rows.length || r.keptSide.length > 0) {
      this.status.writable = false
      this.retryMs = Math.min(Math.max(this.retryMs * 2, 100), 5000)
      this.schedule(this.retryMs)
      this.journal?.soon()
      return false
    }
    this.status.writable = true
    if (r.dropped === 0) this.status.last_error = null
    this.retryMs = 0
    this.journal?.settle()
    return true
  }

  /**
   * Writes every queued call and resolves once they are stored (false when the store refused).
   * Readers await this before answering, so a call that ended is in every answer; with
   * PostgreSQL the write is asynchronous, which is why readers use this and not `flush()`.
   */
  async flushed(): Promise<boolean> {
    // The batch the write thread is writing is awaited, not waited for on this thread: the write
    // thread may itself be waiting (up to 2 s) for another process's lock on the file, and every
    // call in flight would stop meanwhile (a dashboard polling paused the agents' streams). A
    // thread that does not answer within LAND_WAIT_MS is left to `flush`, which gives it up.
    const deadline = Date.now() + LAND_WAIT_MS
    while (this.inFlight.busy && this.threads.running && !this.closed && Date.now() < deadline) {
      await this.inFlight.answeredBy(deadline)
    }
    return this.flush()
  }

  /**
   * Deletes up to `limit` of the oldest calls older than `before` (ms) that the rollups include
   * (retention; see retention.ts), on the connection that writes: the write thread's while it
   * is in use, else this one. Resolves to how many it deleted.
   */
  prune(before: number, limit: number, team: string | null = null): Promise<number> {
    const t = this.closed ? null : this.threads.use()
    if (t) {
      return new Promise((resolve, reject) => {
        t.send({ type: 'prune', before, limit, team }, (r) => {
          this.threads.idleLater()
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

  /** Whether the last `prune` step stopped before it looked at every old call (./retention.ts, `Pruned.more`). */
  pruneUnfinished = false

  /**
   * Hands over every queued call and forgets it (to keep it elsewhere when the database stays
   * unwritable at shutdown), each with a key: kept in a spill file and written at a start after a
   * kill that left the file, it is stored once.
   */
  takePending(): CallRecord[] {
    this.landInFlight()
    const rows = this.pending
    this.pending = []
    this.countPending()
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

  /** The journal's file holding those of `rows` it has (./journal.ts), and how many. */
  inJournal(rows: readonly CallRecord[]): { file: string | null; count: number } {
    const j = this.journal
    if (!j) return { file: null, count: 0 }
    let count = 0
    for (const r of rows) if (j.has(r)) count++
    return { file: j.file, count }
  }

  /** Hands over the rows kept for the next batch (key patterns, holds; after `takePending`) and forgets them. */
  takeSide(): SideWrite[] {
    this.landInFlight()
    const side = this.side
    this.side = []
    return side
  }

  /** Flushes what is queued and stops accepting calls. The database stays open (its owner closes it). */
  close(): boolean {
    // What the last flush cannot write is kept by the stop (../reliability/spill.ts keepPending).
    this.journal?.close()
    const ok = this.flush()
    // All stored: the journal (closed, no more appends) is not needed at the next start.
    if (ok) this.journal?.stored()
    this.closed = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    this.threads.close()
    return ok
  }
}

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string }
  return e?.code ? `${e.code}: ${e.message}` : String(e?.message ?? err)
}
