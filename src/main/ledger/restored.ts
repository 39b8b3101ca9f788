import { isDatabaseProblem } from '../reliability/rows'
import { type WriteBatch, writeOneByOne } from './one-by-one'
import type { CallRecord } from './record'
import type { SideWrite } from './side-writes'

/** What a spill file still holds when the database could not take it at start-up, and what to do once it is written. */
interface Restored {
  rows: CallRecord[]
  side: SideWrite[]
  /** Told once every row is stored (the spill file is removed then). */
  stored: () => void
  /** Told what is still to be stored once some of the rows are (the spill file then holds only those). */
  kept: (rows: CallRecord[], side: SideWrite[]) => void
}

/**
 * The calls and side rows of spill files the database could not take at start-up (still locked,
 * full or read-only: ../reliability/spill.ts). They wait here, ahead of everything recorded since,
 * and are written before it at the ledger's next write that succeeds, each file's rows in a
 * transaction of their own; the file is removed only then (rewritten to hold the rest when only
 * some go in: a row refused for itself, then the database failing again). They are never handed to a new spill
 * file at a stop: their own file still holds them. While they wait, the budget meters count them
 * (`Ledger.unwritten`) and the background holds among them hold (budgets/background-holds.ts).
 */
export class RestoredRows {
  private readonly waiting: Restored[] = []

  add(rows: CallRecord[], side: SideWrite[], stored: () => void, kept: (rows: CallRecord[], side: SideWrite[]) => void): void {
    this.waiting.push({ rows, side, stored, kept })
  }

  get empty(): boolean {
    return this.waiting.length === 0
  }

  /** How many calls wait. */
  get count(): number {
    let n = 0
    for (const r of this.waiting) n += r.rows.length
    return n
  }

  calls(): CallRecord[] {
    return this.waiting.flatMap((r) => r.rows)
  }

  side(): SideWrite[] {
    return this.waiting.flatMap((r) => r.side)
  }

  /**
   * Writes what waits, oldest file first. Returns the database's error when it still cannot take
   * them (the rest waits), else null. A row refused for itself does not hold back the others
   * (../ledger/one-by-one.ts), as for any batch; those dropped are told to `dropped`.
   */
  write(writeBatch: WriteBatch, dropped: (n: number, err: unknown) => void): unknown {
    while (this.waiting.length > 0) {
      const r = this.waiting[0]
      try {
        writeBatch(r.rows, r.side)
      } catch (err) {
        if (isDatabaseProblem(err)) return err
        const one = writeOneByOne(writeBatch, r.rows, r.side)
        if (one.dropped > 0) dropped(one.dropped, one.dropError)
        const sideStored = one.keptSide.length < r.side.length
        r.rows = r.rows.slice(one.written)
        r.side = one.keptSide
        if (r.rows.length > 0 || r.side.length > 0) {
          // Some are stored: the file must keep only the rest, or a stop now writes them twice at the next start.
          if (one.written > 0 || sideStored) tell(() => r.kept(r.rows, r.side))
          return one.stopError ?? new Error('the database could not take the rows kept from a spill file')
        }
      }
      this.waiting.shift()
      tell(r.stored)
    }
    return null
  }
}

function tell(done: () => void): void {
  try {
    done()
  } catch {
    // the file is the caller's: its failure to rewrite or remove it is its own
  }
}
