import { BatchInFlight } from './batch-in-flight'
import type { CallRecord } from './record'
import { RestoredRows } from './restored'
import type { SideWrite } from './side-writes'
import type { LedgerStatus } from './types'

/**
 * What the SQLite ledger has recorded and not yet stored, oldest first: spill files' rows the
 * database could not take at start-up (written before everything else, ./restored.ts), the batch
 * the write thread is writing (./batch-in-flight.ts), then the calls and side rows queued here.
 * Keeps `status.pending` in step (`countPending`).
 */
export class WriteQueue {
  /** Calls recorded and not handed to a write yet. */
  calls: CallRecord[] = []
  /** Rows other than calls to store with the next batch (`Ledger.keepWithNextBatch`). */
  side: SideWrite[] = []
  /** Spill files' rows the database could not take at start-up, written before everything else (./restored.ts). */
  readonly restored = new RestoredRows()
  /** The batch the write thread is writing (./batch-in-flight.ts). */
  readonly inFlight = new BatchInFlight()

  constructor(private readonly status: LedgerStatus) {}

  /** Nothing to write: no call, side row or spill file's row waits. */
  get idle(): boolean {
    return this.calls.length === 0 && this.side.length === 0 && this.restored.empty
  }

  countPending(): void {
    this.status.pending = this.calls.length + this.inFlight.count + this.restored.count
  }

  /** The calls waiting that the journal keeps on disk while the database cannot be written: the thread's batch, then the queue. */
  journalCalls(): CallRecord[] {
    return (this.inFlight.rows ?? []).concat(this.calls)
  }

  /** The side rows the journal keeps with them. */
  journalSide(): SideWrite[] {
    return this.inFlight.side.concat(this.side)
  }

  /** Everything recorded and not on disk (`Ledger.unwritten`). */
  unwritten(): { calls: CallRecord[]; side: SideWrite[] } {
    return {
      calls: this.restored.calls().concat(this.inFlight.rows ?? [], this.calls),
      side: this.restored.side().concat(this.inFlight.side, this.side),
    }
  }

  /** A batch not written where it was sent (the thread refused it, or was given up): queued again, ahead of the rest. */
  putBack(rows: CallRecord[], side: SideWrite[]): void {
    this.calls = rows.concat(this.calls)
    this.side = side.concat(this.side)
    this.countPending()
  }

  /** Memory is full (`maxPending`): the oldest calls leave the queue, in blocks of 1% of the bound. */
  dropOldest(maxPending: number): CallRecord[] {
    // shift() copies the whole queue (0.2 ms at 100,000 held calls), which would slow every call
    // for as long as the database is down.
    const n = Math.max(1, Math.floor(maxPending / 100))
    return this.calls.splice(0, n)
  }

  /** Hands over every queued call and forgets it. */
  takeCalls(): CallRecord[] {
    const rows = this.calls
    this.calls = []
    this.countPending()
    return rows
  }

  /** Hands over every queued side row and forgets it. */
  takeSide(): SideWrite[] {
    const side = this.side
    this.side = []
    return side
  }
}
