import { performance } from 'node:perf_hooks'

/** A pending deadline (see Deadlines); `cancel` it when what it guards has happened. */
export interface Deadline {
  /** performance.now() at which it fires. */
  readonly at: number
  readonly fire: () => void
  /** Its place in the heap; -1 once fired or cancelled. */
  i: number
}

/**
 * The proxied calls' timeouts (first byte, idle), kept in one min-heap under a single timer.
 * A Node timer per call costs a Timeout object, a list insertion and removal, and, whenever the
 * calls under way all end (one connection at a time), the list's libuv timer stopped and started
 * again: several µs a call, for deadlines that almost never fire. Here a call's deadline is a
 * small object pushed on the heap and taken off when the call moves on; the one timer is set
 * for the earliest deadline and only re-set when an earlier one comes, or when it fires. A
 * deadline fires when its time has come, as a Node timer would (never early).
 *
 * The timer is unref'd: a call waiting on its deadline holds its sockets, which keep the
 * process alive; with no call under way the heap may keep a stale timer that must not.
 */
export class Deadlines {
  private readonly heap: Deadline[] = []
  private timer: NodeJS.Timeout | null = null
  /** When the timer is set to fire (Infinity when it is not set). */
  private armedAt = Infinity

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Calls `fire` in `ms` milliseconds, unless cancelled before. */
  add(ms: number, fire: () => void): Deadline {
    const d: Deadline = { at: this.now() + ms, fire, i: this.heap.length }
    this.heap.push(d)
    this.up(d.i)
    if (d.at < this.armedAt) this.arm(d.at)
    return d
  }

  cancel(d: Deadline): void {
    const i = d.i
    if (i < 0) return
    d.i = -1
    const last = this.heap.pop()!
    if (i < this.heap.length) {
      this.heap[i] = last
      last.i = i
      this.up(i)
      this.down(last.i)
    }
    // The timer stays set: when it fires it finds nothing due and is set for the next deadline.
  }

  /** Deadlines pending (tests). */
  get size(): number {
    return this.heap.length
  }

  private arm(at: number): void {
    if (this.timer) clearTimeout(this.timer)
    this.armedAt = at
    this.timer = setTimeout(this.run, Math.max(1, Math.ceil(at - this.now())))
    this.timer.unref()
  }

  private readonly run = (): void => {
    this.timer = null
    this.armedAt = Infinity
    const now = this.now()
    while (this.heap.length > 0 && this.heap[0].at <= now) {
      const d = this.heap[0]
      this.cancel(d)
      try {
        d.fire()
      } catch {
        // what a deadline does is its own; the others still fire
      }
    }
    if (this.heap.length > 0 && this.heap[0].at < this.armedAt) this.arm(this.heap[0].at)
  }

  private up(i: number): void {
    const h = this.heap
    const d = h[i]
    while (i > 0) {
      const p = (i - 1) >> 1
      if (h[p].at <= d.at) break
      h[i] = h[p]
      h[i].i = i
      i = p
    }
    h[i] = d
    d.i = i
  }

  private down(i: number): void {
    const h = this.heap
    const n = h.length
    const d = h[i]
    for (;;) {
      const l = 2 * i + 1
      if (l >= n) break
      const r = l + 1
      const c = r < n && h[r].at < h[l].at ? r : l
      if (h[c].at >= d.at) break
      h[i] = h[c]
      h[i].i = i
      i = c
    }
    h[i] = d
    d.i = i
  }
}

/** The deadlines of every proxied call in this process. */
export const deadlines = new Deadlines()
