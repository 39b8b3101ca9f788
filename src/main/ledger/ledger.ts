import type Database from 'better-sqlite3'
import { isDatabaseProblem, sanitizeRecord } from '../reliability/rows'
import type { CallRecord } from './record'
import { SpendTracker } from './spend'

export interface LedgerOptions {
  /** Longest wait before a recorded call is written (ms). */
  flushIntervalMs: number
  /** Calls held in memory while the database cannot be written. */
  maxPending: number
  timezone: string
}

export interface LedgerStatus {
  /** False while writes are failing (locked, full or read-only database). */
  writable: boolean
  pending: number
  /** Calls dropped because the database stayed unwritable past `maxPending`. */
  dropped: number
  last_error: string | null
}

type Listener = (call: CallRecord) => void

const COLUMNS = [
  'ts', 'provider', 'model', 'endpoint', 'api_key_hash', 'key_hint', 'tenant', 'agent', 'session', 'status',
  'streamed', 'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'cache_write_1h_tokens',
  'reasoning_tokens', 'cost_usd', 'priced', 'estimated', 'latency_ms', 'error',
] as const

/**
 * The write side of the ledger. `record()` is what the proxy calls when a call ends: it
 * updates the in-memory spend at once and queues the row; rows are written in one
 * transaction per batch, at most `flushIntervalMs` later, so recording never blocks a
 * response. If a write fails the batch stays queued (up to `maxPending`) and is retried.
 */
export class Ledger {
  readonly spend: SpendTracker
  private pending: CallRecord[] = []
  private timer: NodeJS.Timeout | null = null
  private readonly insert: Database.Statement
  private readonly writeBatch: (rows: CallRecord[]) => void
  private readonly listeners = new Set<Listener>()
  private readonly batchHooks: ((rows: readonly CallRecord[]) => void)[] = []
  private retryMs = 0
  private closed = false
  readonly status: LedgerStatus = { writable: true, pending: 0, dropped: 0, last_error: null }

  constructor(
    readonly db: Database.Database,
    private readonly opts: LedgerOptions,
  ) {
    this.spend = new SpendTracker(opts.timezone)
    this.spend.load(db)
    // Positional parameters: binding an array is cheaper than looking each name up on an object.
    this.insert = db.prepare(`INSERT INTO calls (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')})`)
    const values: unknown[] = new Array(COLUMNS.length)
    this.writeBatch = db.transaction((rows: CallRecord[]) => {
      for (const r of rows) {
        for (let i = 0; i < COLUMNS.length; i++) {
          const v = r[COLUMNS[i]]
          values[i] = typeof v === 'boolean' ? (v ? 1 : 0) : v
        }
        this.insert.run(values)
      }
      for (const hook of this.batchHooks) hook(rows)
    })
  }

  /**
   * Runs `hook` inside every batch's write transaction, after its rows are inserted
   * (rollups kept in step with the calls). A hook that throws fails the whole batch.
   */
  onBatch(hook: (rows: readonly CallRecord[]) => void): void {
    this.batchHooks.push(hook)
  }

  /** Called for every recorded call, as soon as it is recorded (before it is on disk). */
  onCall(listener: Listener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  record(call: CallRecord): void {
    if (this.closed) throw new Error('ledger is closed')
    this.spend.add(call.api_key_hash, call.ts, call.cost_usd)
    if (this.pending.length >= this.opts.maxPending) {
      // Drop the oldest in blocks of 1% of the bound: shift() copies the whole queue (0.2 ms at
      // 100,000 held calls), which would slow every call for as long as the database is down.
      const n = Math.max(1, Math.floor(this.opts.maxPending / 100))
      this.pending.splice(0, n)
      this.status.dropped += n
    }
    this.pending.push(call)
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

  private schedule(ms: number): void {
    if (this.timer || this.closed) return
    this.timer = setTimeout(() => {
      this.timer = null
      this.flush()
    }, ms)
  }

  /** Writes every queued call now. Returns false when the database refused the write. */
  flush(): boolean {
    if (this.timer) {
      clearTimeout(this.timer)
      this.timer = null
    }
    if (this.pending.length === 0) return true
    const rows = this.pending
    try {
      this.writeBatch(rows)
    } catch (err) {
      // A row the database refuses must not hold back the others: write them one by one.
      if (!isDatabaseProblem(err)) return this.writeOneByOne(rows)
      this.status.writable = false
      this.status.last_error = describe(err)
      this.retryMs = Math.min(Math.max(this.retryMs * 2, 100), 5000)
      this.schedule(this.retryMs)
      return false
    }
    // Calls recorded while the batch was written (none: the write is synchronous) stay queued.
    this.pending = this.pending === rows ? [] : this.pending.slice(rows.length)
    this.status.pending = this.pending.length
    this.status.writable = true
    this.status.last_error = null
    this.retryMs = 0
    return true
  }

  /**
   * Writes `rows` one transaction each; a row refused for itself is written again with its
   * fields coerced to the table's shape, and dropped (counted in `status.dropped`) only if even
   * that fails. Stops, keeping the rest queued, as soon as the database itself is the problem.
   */
  private writeOneByOne(rows: CallRecord[]): boolean {
    let i = 0
    let dropped = 0
    for (; i < rows.length; i++) {
      try {
        this.writeBatch([rows[i]])
      } catch (err) {
        if (isDatabaseProblem(err)) break
        try {
          this.writeBatch([sanitizeRecord(rows[i])])
        } catch (again) {
          if (isDatabaseProblem(again)) break
          this.status.dropped++
          dropped++
          this.status.last_error = `a call could not be written and was dropped: ${describe(again)}`
        }
      }
    }
    this.pending = this.pending === rows ? rows.slice(i) : [...rows.slice(i), ...this.pending.slice(rows.length)]
    this.status.pending = this.pending.length
    if (i < rows.length) {
      this.status.writable = false
      this.retryMs = Math.min(Math.max(this.retryMs * 2, 100), 5000)
      this.schedule(this.retryMs)
      return false
    }
    this.status.writable = true
    if (dropped === 0) this.status.last_error = null
    this.retryMs = 0
    return true
  }

  /** Hands over every queued call and forgets it (to keep it elsewhere when the database stays unwritable at shutdown). */
  takePending(): CallRecord[] {
    const rows = this.pending
    this.pending = []
    this.status.pending = 0
    return rows
  }

  /** Flushes what is queued and stops accepting calls. The database stays open (its owner closes it). */
  close(): boolean {
    const ok = this.flush()
    this.closed = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    return ok
  }
}

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string }
  return e?.code ? `${e.code}: ${e.message}` : String(e?.message ?? err)
}
