interface Waiter {
  seq: number
  resolve: (ok: boolean) => void
}

/** `flushed()` callers, each waiting for the calls recorded before it (through `seq`) to be stored. */
export class FlushWaiters {
  private list: Waiter[] = []

  add(seq: number, resolve: (ok: boolean) => void): void {
    this.list.push({ seq, resolve })
  }

  /**
   * After a batch (`final` false) or a whole pass (`final` true) ended `ok`: resolves with true the
   * waiters whose calls are `written`; when a pass failed, resolves the rest with false. Returns
   * true when a pass ended and some still wait (calls recorded after the pass began).
   */
  settle(ok: boolean, final: boolean, written: (seq: number) => boolean): boolean {
    if (this.list.length === 0) return false
    const keep: Waiter[] = []
    for (const w of this.list) {
      if (ok && written(w.seq)) w.resolve(true)
      else if (final && !ok) w.resolve(false)
      else keep.push(w)
    }
    this.list = keep
    return final && keep.length > 0
  }

  /** The ledger stopped: everyone still waiting hears false. */
  failAll(): void {
    for (const w of this.list.splice(0)) w.resolve(false)
  }
}
