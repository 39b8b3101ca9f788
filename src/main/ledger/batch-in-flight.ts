import { packCalls } from './packed'
import type { CallRecord } from './record'
import type { SideWrite } from './side-writes'
import type { WriteThread } from './write-thread'

/**
 * The batch the write thread is writing (at most one at a time): handed over packed, answered on
 * a later turn, waited for by a synchronous flush (`land`, which takes it back when no answer
 * comes) or by a reader (`answeredBy`, without blocking the event loop).
 */
export class BatchInFlight {
  /** The calls the thread is writing, null when it writes none. */
  rows: CallRecord[] | null = null
  /** The side rows written with them. */
  side: SideWrite[] = []
  private id = 0
  private landingNow = false
  /** Woken when the batch is answered, or taken back. */
  private waiters: (() => void)[] = []

  get busy(): boolean {
    return this.rows !== null
  }

  get count(): number {
    return this.rows?.length ?? 0
  }

  /** True while `land` blocks for the answer (its callback runs inside it). */
  get landing(): boolean {
    return this.landingNow
  }

  /**
   * Hands `rows` and `side` to thread `t`. `answered` runs with the thread's answer, unless the
   * batch was taken back first (`land`).
   */
  send(t: WriteThread, rows: CallRecord[], side: SideWrite[], answered: (ok: boolean, rows: CallRecord[], side: SideWrite[]) => void): void {
    this.rows = rows
    this.side = side
    // Packed: posting the objects would clone every field name and value of every row on this thread.
    this.id = t.send({ type: 'write', rows: packCalls(rows) ?? rows, side }, (r) => {
      this.wake()
      if (this.rows !== rows) return
      this.rows = null
      this.side = []
      answered(r.ok, rows, side)
    })
  }

  /**
   * Blocks until the thread answers the batch (its callback has then run). When no answer comes
   * within `timeoutMs`, the batch is taken back and returned, to be written elsewhere; else null.
   */
  land(t: WriteThread, timeoutMs: number): { rows: CallRecord[]; side: SideWrite[] } | null {
    const rows = this.rows
    if (!rows) return null
    this.landingNow = true
    let answered: boolean
    try {
      answered = t.waitFor(this.id, timeoutMs)
    } finally {
      this.landingNow = false
    }
    if (answered || this.rows !== rows) return null
    const side = this.side
    this.rows = null
    this.side = []
    this.wake()
    return { rows, side }
  }

  /** Resolves once the batch is answered or taken back, or at `deadline` (ms since the epoch). */
  answeredBy(deadline: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    return new Promise<void>((wake) => {
      this.waiters.push(wake)
      timer = setTimeout(wake, deadline - Date.now())
    }).finally(() => clearTimeout(timer))
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w()
  }
}
