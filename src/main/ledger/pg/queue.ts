import { randomBytes } from 'node:crypto'
import type { CallRecord } from '../record'
import type { LedgerStatus } from '../types'

/** A recorded call waiting to be written, numbered in the order it was recorded. */
export interface Entry {
  seq: number
  row: CallRecord
  /** When it was queued (ms). */
  at: number
}

/**
 * The calls recorded and not yet written, oldest first. Each gets a sequence number (what the
 * writer, the spill file and `flushed()` waiters count by) and, when it has none, a call key
 * unique to this process (so a batch sent twice inserts nothing twice). Keeps `status.pending`.
 */
export class PendingQueue {
  private entries: Entry[] = []
  private seq = 0
  private readonly keyPrefix = `${Date.now().toString(36)}${randomBytes(6).toString('hex')}.`

  constructor(private readonly status: LedgerStatus) {}

  get length(): number {
    return this.entries.length
  }

  /** The sequence number of the last call recorded. */
  get lastSeq(): number {
    return this.seq
  }

  /** Queues `call` under a key of its own (unless it has one); returns the queued row, with its key. */
  add(call: CallRecord): CallRecord {
    const seq = ++this.seq
    const row = call.call_key ? call : { ...call, call_key: this.keyPrefix + seq.toString(36) }
    this.entries.push({ seq, row, at: Date.now() })
    this.status.pending = this.entries.length
    return row
  }

  /** How long the oldest queued call has waited (0 when none waits). */
  oldestWait(now: number): number {
    return this.entries.length === 0 ? 0 : now - this.entries[0].at
  }

  /** The oldest `n` calls (they stay queued). */
  head(n: number): Entry[] {
    return this.entries.slice(0, n)
  }

  /** The calls numbered after `seq`. */
  after(seq: number): Entry[] {
    if (this.entries.length === 0) return []
    return this.entries.slice(Math.max(0, seq + 1 - this.entries[0].seq))
  }

  /** Takes the oldest `n` calls out (memory is full). */
  dropOldest(n: number): Entry[] {
    const gone = this.entries.splice(0, n)
    this.status.pending = this.entries.length
    return gone
  }

  /** Forgets the calls through `seq` (written). */
  removeThrough(seq: number): void {
    let i = 0
    while (i < this.entries.length && this.entries[i].seq <= seq) i++
    if (i > 0) this.entries.splice(0, i)
    this.status.pending = this.entries.length
  }

  /** No call through `seq` is still queued. */
  writtenThrough(seq: number): boolean {
    return this.entries.length === 0 || this.entries[0].seq > seq
  }

  /** Every queued call, oldest first (they stay queued). */
  rows(): CallRecord[] {
    return this.entries.map((e) => e.row)
  }

  /** Hands over every queued call and forgets it. */
  take(): CallRecord[] {
    const rows = this.entries.map((e) => e.row)
    this.entries = []
    this.status.pending = 0
    return rows
  }
}
