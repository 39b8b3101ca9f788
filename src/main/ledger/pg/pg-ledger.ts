import { randomBytes } from 'node:crypto'
import { readFile, rm } from 'node:fs/promises'
import { basename } from 'node:path'
import { silentLogger, type Logger } from '../../log'
import { sanitizeRecord } from '../../reliability/rows'
import { parseSpill, spillFiles } from '../../reliability/spill'
import { migratePostgres } from '../../storage/postgres-migrations'
import type { SqlStore } from '../../storage/sql'
import type { CallRecord } from '../record'
import { SpendTracker } from '../spend'
import type { BatchTxHook, CallLedger, LedgerStatus } from '../types'
import { insertCalls, isRowProblem, pgSafe } from './insert'
import { SpillJournal } from './journal'

export interface PgLedgerOptions {
  /** Longest wait before a recorded call is written (ms). */
  flushIntervalMs: number
  /** Calls held in memory while PostgreSQL is away (they are on disk too). */
  maxPending: number
  timezone: string
  /** Where spill files are written and found (the data folder). */
  dataDir: string
  log?: Logger
  /** Rows per INSERT (default 1000). */
  batchRows?: number
  /** Kept out of every error text (the URL's password). */
  secret?: string
  /** Runs before the first write (default: migratePostgres). */
  migrate?: (store: SqlStore) => Promise<unknown>
  /** Longest a stop waits for a write under way before spilling its calls instead (default 10 s). */
  closeWaitMs?: number
  /** A write that has not answered for this long counts as PostgreSQL being away: spilling starts (default 10 s). */
  stallMs?: number
}

/** The PostgreSQL side of `/api/health` (never the URL's password). */
export interface PgStorageStatus {
  /** The last attempt reached PostgreSQL. */
  reachable: boolean
  /** Schema migrated, earlier spill files written and spend loaded: calls are being written. */
  ready: boolean
  /** Calls this instance has put in its spill file since PostgreSQL went away and not yet written. */
  spilled: number
  /** Spill files in the data folder waiting for PostgreSQL. */
  spill_files: number
  last_error: string | null
}

interface Entry {
  seq: number
  row: CallRecord
}

interface Waiter {
  seq: number
  resolve: (ok: boolean) => void
}

/**
 * The ledger's write side on PostgreSQL. `record()` never waits: it counts the spend, gives the
 * call a unique key and queues it. A writer, one pass at a time, writes the queue in batches (one
 * INSERT … SELECT FROM unnest per batch, in one transaction with the batch hooks) at most
 * `flushIntervalMs` after a call is recorded. A batch sent again after a lost COMMIT answer
 * inserts nothing twice (ON CONFLICT on the call key).
 *
 * While PostgreSQL is away the queue stays in memory (up to `maxPending`) and is appended to a
 * spill file every tick, so a killed process leaves its calls on disk. When PostgreSQL answers
 * again the queue is written and the spill file removed (or, if calls had to leave memory, read
 * back and written first). Spill files found at start-up (a killed or stopped instance's) are
 * written before the spend is read, so each call counts once, and then removed.
 */
export class PgLedger implements CallLedger {
  readonly kind = 'postgres' as const
  readonly writesOnThread = false
  readonly spend: SpendTracker
  readonly status: LedgerStatus = { writable: true, pending: 0, dropped: 0, last_error: null }
  readonly storage: PgStorageStatus = { reachable: false, ready: false, spilled: 0, spill_files: 0, last_error: null }
  private pending: Entry[] = []
  private seq = 0
  private readonly keyPrefix = `${Date.now().toString(36)}${randomBytes(6).toString('hex')}.`
  private timer: NodeJS.Timeout | null = null
  private writing: Promise<void> | null = null
  /** When the writer last started a pass or finished a batch. */
  private progressAt = 0
  private retryAt = 0
  private retryMs = 0
  private away = false
  private closed = false
  private closing: Promise<boolean> | null = null
  private readonly log: Logger
  private readonly batchRows: number
  /** Spill files found at start-up: written before the spend is loaded. */
  private readonly earlier: string[]
  /** Own spill files whose calls must be read back (some had left memory). */
  private readonly backlog: string[] = []
  private journal: SpillJournal | null = null
  /** Highest sequence number in the journal. */
  private spilledThrough = 0
  /** A call of the journal left memory (past maxPending): the file is read back when PostgreSQL returns. */
  private journalIncomplete = false
  private spilling: Promise<void> | null = null
  private spillFailing = false
  private waiters: Waiter[] = []
  private readonly hooks: BatchTxHook[] = []
  private readonly listeners = new Set<(call: CallRecord) => void>()

  constructor(
    readonly store: SqlStore,
    private readonly opts: PgLedgerOptions,
  ) {
    this.spend = new SpendTracker(opts.timezone)
    this.log = opts.log ?? silentLogger
    this.batchRows = opts.batchRows ?? 1000
    this.earlier = spillFiles(opts.dataDir)
    this.countFiles()
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

  record(call: CallRecord): void {
    if (this.closed) throw new Error('ledger is closed')
    if (call.billing !== 'subscription') this.spend.add(call.api_key_hash, call.ts, call.cost_usd)
    const seq = ++this.seq
    const row = call.call_key ? call : { ...call, call_key: this.keyPrefix + seq.toString(36) }
    if (this.pending.length >= this.opts.maxPending) this.dropOldest()
    this.pending.push({ seq, row })
    this.status.pending = this.pending.length
    this.schedule(this.opts.flushIntervalMs)
    for (const l of this.listeners) {
      try {
        l(call)
      } catch {
        // a listener's failure is its own; recording goes on
      }
    }
  }

  /** Memory is full: the oldest calls leave it (1% of the bound at once); those not on disk are lost and counted. */
  private dropOldest(): void {
    const n = Math.max(1, Math.floor(this.opts.maxPending / 100))
    const gone = this.pending.splice(0, n)
    const lost = gone.filter((e) => e.seq > this.spilledThrough).length
    if (lost < gone.length) this.journalIncomplete = true
    if (lost > 0) {
      this.status.dropped += lost
      this.status.last_error = `${lost} call(s) were dropped: PostgreSQL is away and they could not be kept on disk`
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
    const target = this.seq
    if (this.storage.ready && this.writtenThrough(target) && !this.writing) return true
    return new Promise<boolean>((resolve) => {
      this.waiters.push({ seq: target, resolve })
      this.flush()
    })
  }

  /**
   * Retention on PostgreSQL: the rollups of a call are written in its batch's transaction, so
   * every stored call is already in them; identity ids are never handed out again.
   */
  async prune(before: number, limit: number): Promise<number> {
    return this.store.run(
      'DELETE FROM calls WHERE id IN (SELECT id FROM calls WHERE ts < @before ORDER BY ts LIMIT @limit)',
      { before, limit },
    )
  }

  takePending(): CallRecord[] {
    const rows = this.pending.map((e) => e.row)
    this.pending = []
    this.status.pending = 0
    return rows
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
    if (!this.writing && (this.pending.length > 0 || !this.storage.ready || this.journal || this.backlog.length > 0)) {
      // One last attempt (PostgreSQL may be back); what it cannot write goes to the spill file.
      this.retryAt = 0
      this.startPass()
      await within(this.writing, limit)
    }
    const ok = this.pending.length === 0 && this.storage.ready
    await this.spilling
    if (this.pending.length > 0) {
      const rows = this.unspilled()
      try {
        this.journal ??= new SpillJournal(this.opts.dataDir)
        await this.journal.append(rows.map((e) => e.row))
        this.spilledThrough = this.seq
        this.storage.spilled += rows.length
      } catch (err) {
        this.status.dropped += rows.length
        this.log.error(`${rows.length} call(s) could not be saved anywhere: ${this.describe(err)}`)
      }
    }
    const file = await this.journal?.close()
    if (file && this.storage.spilled > 0) {
      this.log.warn(`PostgreSQL is away (${this.status.last_error}); ${this.storage.spilled} call(s) kept in ${file} until the next start`)
    }
    for (const w of this.waiters.splice(0)) w.resolve(false)
    return ok
  }

  private schedule(ms: number): void {
    if (this.timer || this.closed) return
    this.timer = setTimeout(this.due, ms)
  }

  private readonly due = (): void => {
    this.timer = null
    if (this.writing && !this.away && Date.now() - this.progressAt > (this.opts.stallMs ?? 10_000)) {
      this.markAway(new Error('PostgreSQL has not answered a write for a while'), false)
    }
    if (this.away) this.spill()
    if (!this.writing && Date.now() >= this.retryAt) this.startPass()
    else this.reschedule()
  }

  private reschedule(): void {
    if (this.closed) return
    const work = this.pending.length > 0 || !this.storage.ready || this.backlog.length > 0 || this.journal !== null
    if (!work) return
    // Away: a tick every flush interval still spills what is new; the next attempt waits for retryAt.
    const tick = this.opts.flushIntervalMs
    this.schedule(this.away && !this.writing ? Math.min(tick, Math.max(1, this.retryAt - Date.now())) : tick)
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
      while (this.pending.length > 0) {
        const batch = this.pending.slice(0, this.batchRows)
        await this.writeRows(batch.map((e) => e.row))
        this.reached()
        this.removeThrough(batch[batch.length - 1].seq)
        this.progressAt = Date.now()
        this.settleWaiters(true, false)
      }
      await this.finishJournal()
      while (this.backlog.length > 0) await this.writeFile(this.backlog[0], this.backlog)
      this.reached()
      return true
    } catch (err) {
      this.markAway(err, true)
      return false
    }
  }

  /** Before the first write: the schema, the calls earlier runs spilled, then the spend already stored. */
  private async prepare(): Promise<void> {
    await (this.opts.migrate ?? migratePostgres)(this.store)
    this.reached()
    while (this.earlier.length > 0) await this.writeFile(this.earlier[0], this.earlier)
    await this.spend.loadStore(this.store)
    this.storage.ready = true
  }

  /** Writes a spill file's calls (once: each has a key) and removes it. */
  private async writeFile(file: string, list: string[]): Promise<void> {
    let rows: CallRecord[]
    try {
      rows = parseSpill(await readFile(file, 'utf8'))
    } catch (err) {
      // Not PostgreSQL's problem: an unreadable file stays where it is for a person to look at.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.log.error(`cannot read the spill file ${file} (${this.describe(err)}); it stays there`)
      list.shift()
      this.countFiles()
      return
    }
    // A file from the SQLite ledger has no keys: its name and line make stable ones.
    const name = basename(file)
    rows = rows.map((r, i) => (r.call_key ? r : { ...r, call_key: `${name}:${i}` }))
    for (let i = 0; i < rows.length; i += this.batchRows) await this.writeRows(rows.slice(i, i + this.batchRows))
    await rm(file, { force: true })
    list.shift()
    this.countFiles()
    if (rows.length > 0) this.log.info(`wrote ${rows.length} call(s) kept in ${file} to PostgreSQL`)
  }

  /** One batch in one transaction; a row PostgreSQL refuses for itself does not hold back the others. */
  private async writeRows(rows: CallRecord[]): Promise<void> {
    try {
      await this.insert(rows)
    } catch (err) {
      if (!isRowProblem(err)) throw err
      for (const row of rows) {
        try {
          await this.insert([row])
        } catch (e) {
          if (!isRowProblem(e)) throw e
          try {
            await this.insert([pgSafe(sanitizeRecord(row))])
          } catch (again) {
            if (!isRowProblem(again)) throw again
            this.status.dropped++
            this.status.last_error = `a call could not be written and was dropped: ${this.describe(again)}`
          }
        }
      }
    }
  }

  private async insert(rows: readonly CallRecord[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.store.transaction(async (tx) => {
          const stored = await insertCalls(tx, rows)
          for (const hook of this.hooks) await hook(tx, stored)
        })
      } catch (err) {
        // Another instance's batch won a lock (deadlock, serialization failure): the transaction
        // was rolled back whole, and the same batch goes again at once; PostgreSQL is not away.
        if (attempt >= MAX_TX_ATTEMPTS || !isTransient(err)) throw err
      }
    }
  }

  /** Everything of the journal is stored (or read back): the file goes. */
  private async finishJournal(): Promise<void> {
    const j = this.journal
    const stored = () => this.pending.length === 0 || this.pending[0].seq > this.spilledThrough
    if (!j || !stored()) return
    await this.spilling
    if (this.journal !== j || this.away || this.spilling || !stored()) return
    this.journal = null
    const file = await j.close()
    if (!file) return
    if (this.journalIncomplete) {
      this.journalIncomplete = false
      this.backlog.push(file)
    } else {
      await rm(file, { force: true })
      this.log.info(`PostgreSQL is back: the ${this.storage.spilled} call(s) spilled to ${file} are written`)
    }
    this.storage.spilled = 0
    this.countFiles()
  }

  /** Appends the calls not on disk yet to the journal (while PostgreSQL is away). */
  private spill(): void {
    if (this.spilling || this.closed) return
    const rows = this.unspilled()
    if (rows.length === 0) return
    const last = rows[rows.length - 1].seq
    this.journal ??= new SpillJournal(this.opts.dataDir)
    const j = this.journal
    this.spilling = j
      .append(rows.map((e) => e.row))
      .then(
        () => {
          this.spilledThrough = last
          this.storage.spilled += rows.length
          if (this.spillFailing) this.log.info(`calls are being spilled to ${j.file} again`)
          this.spillFailing = false
          this.countFiles()
        },
        (err) => {
          if (!this.spillFailing) this.log.error(`PostgreSQL is away and calls cannot be spilled to disk (${this.describe(err)}); they are held in memory`)
          this.spillFailing = true
        },
      )
      .finally(() => {
        this.spilling = null
      })
  }

  private unspilled(): Entry[] {
    if (this.pending.length === 0) return []
    return this.pending.slice(Math.max(0, this.spilledThrough + 1 - this.pending[0].seq))
  }

  private removeThrough(seq: number): void {
    let i = 0
    while (i < this.pending.length && this.pending[i].seq <= seq) i++
    if (i > 0) this.pending.splice(0, i)
    this.status.pending = this.pending.length
  }

  private writtenThrough(seq: number): boolean {
    return this.pending.length === 0 || this.pending[0].seq > seq
  }

  private settleWaiters(ok: boolean, final = true): void {
    if (this.waiters.length === 0) return
    const keep: Waiter[] = []
    for (const w of this.waiters) {
      if (ok && this.storage.ready && this.writtenThrough(w.seq)) w.resolve(true)
      else if (final && !ok) w.resolve(false)
      else keep.push(w)
    }
    this.waiters = keep
    // Calls recorded after the pass ended that a waiter counts on: another pass now.
    if (final && keep.length > 0 && !this.closed) queueMicrotask(() => this.startPass())
  }

  /** PostgreSQL answered. */
  private reached(): void {
    this.storage.reachable = true
    this.storage.last_error = null
    if (this.away) this.log.info('PostgreSQL answers again; writing the calls held meanwhile')
    this.away = false
    this.status.writable = true
    if (this.status.last_error && !/dropped/.test(this.status.last_error)) this.status.last_error = null
    this.retryMs = 0
    this.retryAt = 0
  }

  private markAway(err: unknown, failed: boolean): void {
    const text = this.describe(err)
    if (failed) {
      this.storage.reachable = false
      this.retryMs = Math.min(Math.max(this.retryMs * 2, 100), 5000)
      this.retryAt = Date.now() + this.retryMs
    }
    this.storage.last_error = text
    this.status.last_error = text
    this.status.writable = false
    this.away = true
    this.spill()
  }

  private countFiles(): void {
    this.storage.spill_files = this.earlier.length + this.backlog.length + (this.journal?.open ? 1 : 0)
  }

  private describe(err: unknown): string {
    const e = err as { code?: string; message?: string }
    let text = e?.code ? `${e.code}: ${e.message}` : String(e?.message ?? err)
    if (this.opts.secret) text = text.split(this.opts.secret).join('***')
    return text
  }
}

const MAX_TX_ATTEMPTS = 5

/** serialization_failure, deadlock_detected: a transaction to run again, not a database away. */
function isTransient(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return code === '40001' || code === '40P01'
}

/** Waits for `p`, but no longer than `ms`. */
async function within(p: Promise<unknown> | null, ms: number): Promise<void> {
  if (!p) return
  let timer: NodeJS.Timeout | undefined
  await Promise.race([p, new Promise<void>((r) => (timer = setTimeout(r, ms)))])
  clearTimeout(timer)
}
