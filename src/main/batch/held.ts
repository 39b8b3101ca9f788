import { createHash } from 'node:crypto'
import type { LoggedCall } from '../import/types'

/** One results file's requests being stored, or waiting to be tried again. */
export interface HeldSet {
  readonly id: string
  /** The requests to store: the newest read's (a read of the same requests replaces them). */
  calls: LoggedCall[]
  /** Its first write failed: it waits in memory to be tried again (counted against the bound). */
  waiting: boolean
}

/**
 * The Batch API requests the recorder holds in memory (./record.ts), one set per 1,000 requests
 * of a results file (handed on as its lines pass) or per batch answer read whole:
 * the same file read again while its requests wait for the database replaces them rather than
 * adding a copy, and the requests waiting in all are at most `max` (ledger.max_pending), so a
 * database away for its twenty minutes cannot grow memory without bound.
 */
export class HeldRequests {
  private readonly sets = new Map<string, HeldSet>()
  /** Requests in the sets waiting to be tried again. */
  private count = 0

  constructor(private readonly max: number) {}

  get waiting(): number {
    return this.count
  }

  /**
   * A read of `calls`: a new set to store, or null when the same requests are being stored
   * already (that set takes this read's, the newer, for its next try); `replaced` says whether
   * the set was waiting.
   */
  join(calls: LoggedCall[]): { set: HeldSet | null; replaced: boolean } {
    const id = setId(calls)
    const same = this.sets.get(id)
    if (same) {
      if (same.waiting) this.count += calls.length - same.calls.length
      same.calls = calls
      return { set: null, replaced: same.waiting }
    }
    const set: HeldSet = { id, calls, waiting: false }
    this.sets.set(id, set)
    return { set, replaced: false }
  }

  /** The set's first write failed: true when it may wait to be tried again (within the bound); false, and it is let go, when not. */
  hold(set: HeldSet): boolean {
    if (set.waiting) return true
    if (this.count + set.calls.length > this.max) {
      this.release(set)
      return false
    }
    set.waiting = true
    this.count += set.calls.length
    return true
  }

  /** The set is stored, or given up. */
  release(set: HeldSet): void {
    if (this.sets.get(set.id) !== set) return
    this.sets.delete(set.id)
    if (set.waiting) this.count -= set.calls.length
  }
}

/** A set of requests' identity: their keys and response ids, in the file's order (the same file read again has the same). */
function setId(calls: readonly LoggedCall[]): string {
  const h = createHash('sha256')
  for (const c of calls) h.update(`${c.key}\0${c.response_id}\n`)
  return h.digest('base64')
}
