import { getHeapStatistics, setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { fixMmapThreshold, lowerTrimThreshold, releaseFreedMemory, restoreTrimThreshold } from './malloc-trim'

/**
 * Gives memory back once the server is quiet. Start-up and every burst of calls grow V8's young
 * generation (to 64 MiB under load), and V8 keeps it at its largest size as long as nothing asks
 * it to shrink: an idle server would go on holding what its busiest minute needed. When no
 * request has arrived for a while and the heap is at least `growthBytes` above where the last
 * collection left it, this asks V8 for a memory-reducing collection (`last-resort`: a full
 * compacting GC that also shrinks the young generation) from a timer of its own, never inside
 * a request. The hot path only counts requests (`touch`).
 *
 * It is not free for the calls that follow: with its young generation shrunk, V8 scavenges more
 * often until it has grown it again, and the first seconds of the next burst cost more CPU per
 * call (measured: a saturated burst right after each collection served about 0.6-0.85x the calls
 * of one without). So after start-up it runs as soon as the server is ready and quiet (nothing
 * is warm yet), but after calls only once they have stopped for 30 s: a pause between an agent's
 * calls does not trigger it, the end of a session does.
 */
export interface IdleCollector {
  /** A request arrived (cheap: a counter, and a timer armed once per quiet period). */
  touch(): void
  /** A proxied call arrived: `touch()`, and the first one fixes glibc's thresholds for calls (see `trimThreshold.first`). */
  call(): void
  /** Starts watching (the server is ready: its start-up is the first activity). */
  start(): void
  stop(): void
  /** Collections run so far. */
  readonly collections: number
}

export interface IdleCollectorOptions {
  /** No request for this long after calls counts as quiet (default 30 s). */
  quietMs?: number
  /** After start-up, quiet comes sooner (default 1 s): the server is ready and nothing has called yet. */
  firstQuietMs?: number
  /** Collect only when the heap has grown at least this much since the last collection (default 8 MiB; 0: after every quiet period that had requests). */
  growthBytes?: number
  /** Runs the collection (default: V8's memory-reducing GC; tests may watch it). */
  collect?: () => void
  /**
   * Once calls have gone quiet (not after start-up), when the process's resident size is at
   * least `growthBytes` above where the last release (or start-up) left it, gives the C heap's
   * freed memory back to the system (default: glibc's `malloc_trim`, ./malloc-trim.ts; tests may
   * watch it).
   */
  release?: () => void
  /**
   * Once calls have been quiet for three quarters of `quietMs` (before the ledger's write thread
   * ends, 30 s after its last batch, and before the release), lowers glibc's trim threshold, so
   * that the memory threads free from then on goes back to the system; the next request raises
   * it again; and `first`, once, just after the first proxied call (not at start nor for health
   * checks: a server that has made no call needs nothing of the C library), fixes glibc's
   * thresholds for calls, so that large chunks are mmapped and never left in a thread's arena
   * (default: ./malloc-trim.ts; tests may watch it).
   */
  trimThreshold?: { lower(): void; restore(): void; first?(): void }
}

type GcFunction = (opts?: { type?: string; execution?: string; flavor?: string }) => unknown

let gcFunction: GcFunction | null | undefined

/** V8's `gc()`, exposed without a command-line flag (null if this runtime does not allow it). */
function v8Gc(): GcFunction | null {
  if (gcFunction !== undefined) return gcFunction
  const g = (globalThis as { gc?: GcFunction }).gc
  if (typeof g === 'function') return (gcFunction = g)
  try {
    setFlagsFromString('--expose-gc')
    const f = runInNewContext('gc') as unknown
    gcFunction = typeof f === 'function' ? (f as GcFunction) : null
  } catch {
    gcFunction = null
  }
  return gcFunction
}

/** A memory-reducing full collection (a few ms to tens of ms of this thread: call it when nothing waits). */
export function reduceMemory(): void {
  const gc = v8Gc()
  if (!gc) return
  try {
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' })
  } catch {
    // an older V8 without options: a plain full collection
    gc()
  }
}

const physical = () => getHeapStatistics().total_physical_size

export function idleCollector(opts: IdleCollectorOptions = {}): IdleCollector {
  const quietMs = opts.quietMs ?? 30_000
  const firstQuietMs = opts.firstQuietMs ?? 1_000
  const growth = opts.growthBytes ?? 8 * 1024 * 1024
  const collect = opts.collect ?? reduceMemory
  const release = opts.release ?? releaseFreedMemory
  const threshold = opts.trimThreshold ?? { lower: lowerTrimThreshold, restore: restoreTrimThreshold, first: fixMmapThreshold }
  /** The trim threshold is lowered (since the last request). */
  let lowered = false
  /** No proxied call has come yet (then the first one fixes glibc's thresholds). */
  let firstPending = typeof threshold.first === 'function'
  let activity = 0
  let seen = -1
  let timer: NodeJS.Timeout | null = null
  let running = false
  /** The heap's physical size after the last collection (0: none yet, so the first one runs). */
  let floor = 0
  /** The process's resident size after the start-up collection or the last release. */
  let rssFloor = 0
  let collections = 0
  /** How long no request has arrived, as the checks have seen it. */
  let quietFor = 0

  // Quiet is checked in quarters of the period, so a collection comes 1-1.25 periods after the
  // last request (one timer a quarter period while calls come; none at rest).
  const period = () => (floor === 0 ? firstQuietMs : quietMs)
  const arm = () => {
    seen = activity
    timer = setTimeout(check, Math.max(1, Math.ceil(period() / 4)))
    timer.unref()
  }
  const check = () => {
    timer = null
    if (!running) return
    quietFor = activity === seen ? quietFor + Math.ceil(period() / 4) : 0
    // After calls, a quarter period before the release: from here the arenas' freed tops go back
    // (the write thread's cache when it ends, V8's helpers in the collection below).
    if (floor !== 0 && !lowered && quietFor >= period() - Math.ceil(period() / 4)) {
      lowered = true
      threshold.lower()
    }
    if (quietFor < period()) {
      arm()
      return
    }
    quietFor = 0
    const afterCalls = floor !== 0
    if (floor === 0 || growth <= 0 || physical() >= floor + growth) {
      collect()
      collections++
      floor = physical()
    }
    // The C heap is not V8's: the threads' allocations under load (SQLite's cache on the write
    // thread, V8's GC helpers) are freed into glibc's arenas, which keep them. V8 may have
    // shrunk its own heap already (and skipped the collection above); the process's resident
    // size says whether there is more to give back.
    if (!afterCalls) rssFloor = process.memoryUsage.rss()
    else if (growth <= 0 || process.memoryUsage.rss() >= rssFloor + growth) {
      release()
      rssFloor = process.memoryUsage.rss()
    }
  }
  const restore = () => {
    lowered = false
    threshold.restore()
  }
  const touch = () => {
    activity++
    // Calls run with glibc's threshold high again (once per quiet period).
    if (lowered) restore()
    if (timer === null && running) {
      quietFor = 0
      arm()
    }
  }
  return {
    touch,
    call() {
      touch()
      if (firstPending) {
        // Once, after this call's own work (loading the FFI takes a few ms), before a load can
        // have freed large chunks into the threads' arenas.
        firstPending = false
        setImmediate(() => threshold.first?.())
      }
    },
    start() {
      if (running) return
      running = true
      activity++
      arm()
    },
    stop() {
      running = false
      if (timer) clearTimeout(timer)
      timer = null
      if (lowered) restore()
    },
    get collections() {
      return collections
    },
  }
}
