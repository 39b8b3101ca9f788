/** Timer functions, injectable so tests can drive time. */
export interface Timers {
  /** Milliseconds on a clock that only moves forward (never the wall clock, which can be set back). */
  now(): number
  setTimeout(fn: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

export const realTimers: Timers = {
  // Monotonic: a wall clock set back an hour would hold the next draw back an hour.
  now: () => performance.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms)
    t.unref?.()
    return t
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
}

/**
 * Runs `fn` at most once per `intervalMs`, on the leading edge and once more at the end of a
 * burst: the first request runs on the next tick, later ones within the interval are merged into one
 * run when the interval ends. So an update is never later than `intervalMs` after a request,
 * and a burst of thousands of requests costs one run per interval.
 */
export class Throttle {
  private last = Number.NEGATIVE_INFINITY
  private timer: unknown = null
  private stopped = false

  constructor(
    private readonly fn: () => void,
    private readonly intervalMs: number,
    private readonly timers: Timers = realTimers,
  ) {}

  /** Never runs `fn` synchronously: the caller (the ledger, on the proxy's path) returns first. */
  request(): void {
    if (this.stopped || this.timer !== null) return
    const wait = Math.max(0, this.last + this.intervalMs - this.timers.now())
    this.timer = this.timers.setTimeout(() => this.run(), wait)
  }

  private run(): void {
    this.timer = null
    if (this.stopped) return
    this.last = this.timers.now()
    this.fn()
  }

  stop(): void {
    this.stopped = true
    if (this.timer !== null) this.timers.clearTimeout(this.timer)
    this.timer = null
  }
}
