import type Database from 'better-sqlite3'
import { isDatabaseProblem } from '../reliability/rows'
import type { CallKeys } from './call-keys'
import { INSERT_KEYED_CALL_SQL, insertKeyedCalls } from './columns'
import type { LedgerJournal } from './journal'
import { LAND_WAIT_MS, type LedgerOptions } from './ledger-options'
import { writeOneByOne } from './one-by-one'
import type { CallRecord } from './record'
import { type SideWrite, sideWriter } from './side-writes'
import { THREAD_IDLE_MS, ThreadKeeper } from './thread-keeper'
import type { ThreadHook } from './types'
import { describe, type WriteHealth } from './write-health'
import type { WriteQueue } from './write-queue'

/**
 * How the SQLite ledger's queue (./write-queue.ts) reaches the database: in one transaction per
 * batch, with the batch hooks (rollups) and the side rows, at most a flush interval after a call
 * is recorded. A batch due on the timer goes to the write thread while the database is writable
 * (./thread-keeper.ts); `flush` writes here and waits. A refused write keeps what it held and is
 * tried again (0.1 s, backing off to 5 s), the journal keeping the waiting calls on disk meanwhile
 * (./journal.ts); a batch refused for one of its rows is written row by row (./one-by-one.ts).
 */
export class BatchWriter {
  /** Stopped (`close`): nothing more is scheduled. */
  closed = false
  /** The write thread, started for a batch and ended once idle (./thread-keeper.ts). */
  readonly threads: ThreadKeeper
  private timer: NodeJS.Timeout | null = null
  private readonly writeBatch: (rows: CallRecord[], side?: readonly SideWrite[]) => void
  private readonly batchHooks: ((rows: readonly CallRecord[]) => void)[] = []
  /** Hooks only this thread can run: while there are any, no batch goes to the write thread. */
  private ownHooks = 0

  constructor(
    db: Database.Database,
    private readonly opts: LedgerOptions,
    private readonly queue: WriteQueue,
    private readonly health: WriteHealth,
    /** Keys for the calls whose write could be done twice (./call-keys.ts). */
    private readonly keys: CallKeys,
    private readonly journal: LedgerJournal | null,
  ) {
    const insert = db.prepare(INSERT_KEYED_CALL_SQL)
    const writeSide = sideWriter(db)
    const values: unknown[] = []
    this.writeBatch = db.transaction((rows: CallRecord[], side: readonly SideWrite[] = []) => {
      // A call whose key is stored already is not inserted again, nor added to the rollups again.
      const inserted = insertKeyedCalls(insert, rows, values)
      writeSide(side)
      for (const hook of this.batchHooks) hook(inserted)
    })
    this.threads = new ThreadKeeper(db.memory ? undefined : opts.writeThread, db.name, opts.threadIdleMs ?? THREAD_IDLE_MS, () => this.queue.inFlight.busy)
  }

  /** See `Ledger.onBatch`. */
  onBatch(hook: (rows: readonly CallRecord[]) => void, onThread?: ThreadHook): void {
    this.batchHooks.push(hook)
    if (!onThread || !this.threads.addHook(onThread)) this.ownHooks++
  }

  /** A batch is due in `ms` (unless one is due already). */
  schedule(ms: number): void {
    if (this.timer || this.closed) return
    this.timer = setTimeout(() => {
      this.timer = null
      this.flushDue()
    }, ms)
  }

  /**
   * A batch due on the timer: to the write thread when it can take it (starting one if none
   * runs: the batch waits in its queue while it opens the database), else written here.
   */
  private flushDue(): void {
    const q = this.queue
    if (q.inFlight.busy) {
      this.schedule(this.opts.flushIntervalMs)
      return
    }
    // Spill files' rows waiting are written here, before the queue (./restored.ts).
    const t = this.ownHooks > 0 || !this.health.status.writable || q.idle || !q.restored.empty ? null : this.threads.use()
    if (!t) {
      this.flush()
      return
    }
    const rows = q.calls
    const side = q.side
    q.calls = []
    q.side = []
    // Keyed: if the thread is given up after it committed them (no answer in time, or it died),
    // writing them again here inserts nothing.
    this.keys.give(rows)
    q.inFlight.send(t, rows, side, (ok, rows, side) => {
      this.threads.idleLater()
      if (ok) {
        this.health.wrote()
        q.countPending()
        this.journal?.settle()
        return
      }
      // Written here instead, where a refusal is handled as always (kept and retried, or row by row).
      q.putBack(rows, side)
      // (Inside landInFlight the flush under way goes on to write them.)
      if (!this.closed && !q.inFlight.landing) this.flush()
    })
  }

  /** Waits for the batch the write thread is writing (a synchronous flush must find it written). */
  landInFlight(): void {
    const thread = this.threads.running
    if (!thread) return
    const back = this.queue.inFlight.land(thread, LAND_WAIT_MS)
    if (!back) return
    // No answer: stop using the thread, and keep the batch to be written here.
    this.threads.giveUp()
    this.queue.putBack(back.rows, back.side)
  }

  /** Writes every queued call now. Returns false when the database refused the write. */
  flush(): boolean {
    if (this.timer) {
      clearTimeout(this.timer)
      this.timer = null
    }
    this.landInFlight()
    const q = this.queue
    const status = this.health.status
    if (!q.restored.empty) {
      let dropError: string | null = null
      const err = q.restored.write(this.writeBatch, (n, e) => {
        status.dropped += n
        status.last_drop = `the database refused them: ${describe(e)}`
        dropError = `a call could not be written and was dropped: ${describe(e)}`
      })
      q.countPending()
      if (err) return this.refused(err)
      this.health.wrote()
      status.last_error = dropError
    }
    if (q.calls.length === 0 && q.side.length === 0) {
      this.journal?.settle()
      return true
    }
    const rows = q.calls
    const side = q.side
    q.side = []
    try {
      this.writeBatch(rows, side)
    } catch (err) {
      q.side = side.concat(q.side)
      // A row the database refuses must not hold back the others: write them one by one.
      if (!isDatabaseProblem(err)) return this.writeOneByOne(rows)
      return this.refused(err)
    }
    // Calls recorded while the batch was written (none: the write is synchronous) stay queued.
    q.calls = q.calls === rows ? [] : q.calls.slice(rows.length)
    q.countPending()
    this.health.wrote()
    this.journal?.settle()
    return true
  }

  /**
   * Writes every queued call and resolves once they are stored (false when the store refused).
   * The batch the write thread is writing is awaited, not waited for on this thread: the write
   * thread may itself be waiting (up to 2 s) for another process's lock on the file, and every
   * call in flight would stop meanwhile (a dashboard polling paused the agents' streams). A
   * thread that does not answer within LAND_WAIT_MS is left to `flush`, which gives it up.
   */
  async flushed(): Promise<boolean> {
    const deadline = Date.now() + LAND_WAIT_MS
    while (this.queue.inFlight.busy && this.threads.running && !this.closed && Date.now() < deadline) {
      await this.queue.inFlight.answeredBy(deadline)
    }
    return this.flush()
  }

  /** Stops: nothing more is scheduled, and the write thread ends. */
  close(): void {
    this.closed = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    this.threads.close()
  }

  /** The database refused a write (locked, full, read-only): what was to be written stays, and is tried again later. */
  private refused(err: unknown): false {
    this.health.status.writable = false
    this.health.status.last_error = describe(err)
    this.schedule(this.health.backOff())
    this.journal?.soon()
    return false
  }

  /** The batch refused for one of its rows: written row by row (./one-by-one.ts), the rest kept while the database is the problem. */
  private writeOneByOne(rows: CallRecord[]): boolean {
    const q = this.queue
    const status = this.health.status
    const side = q.takeSide()
    const r = writeOneByOne(this.writeBatch, rows, side)
    q.side = r.keptSide.concat(q.side)
    status.dropped += r.dropped
    if (r.dropError) {
      status.last_error = `a call could not be written and was dropped: ${describe(r.dropError)}`
      status.last_drop = `the database refused them: ${describe(r.dropError)}`
    }
    const i = r.written
    q.calls = q.calls === rows ? rows.slice(i) : [...rows.slice(i), ...q.calls.slice(rows.length)]
    q.countPending()
    if (i < rows.length || r.keptSide.length > 0) {
      status.writable = false
      // Why the rest waits: the database's own failure, not a row dropped before it.
      if (r.stopError) status.last_error = describe(r.stopError)
      this.schedule(this.health.backOff())
      this.journal?.soon()
      return false
    }
    status.writable = true
    if (r.dropped === 0) status.last_error = null
    this.health.retryMs = 0
    this.journal?.settle()
    return true
  }
}
