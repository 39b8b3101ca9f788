import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { CHARS_PER_TOKEN, type Count, type EncodingName, PieceCounter, type Sample, loadCount } from './token-count'

/** What the estimate thread is asked (./estimate-worker.ts). */
export type CountRequest = { type: 'count'; id: number; encoding: EncodingName; samples: Sample[] } | { type: 'warm'; encoding: EncodingName }
export interface CountReply {
  id: number
  counts?: number[]
  message?: string
}

/** Most characters waiting to be counted; past it a call's estimate is taken from its length alone. */
export const MAX_QUEUED_CHARS = 32_000_000
/** Longest stretch of counting on the main thread before it yields to the calls under way. */
const SLICE_MS = 2
/**
 * Longest the estimate thread may leave counts waiting without answering any: a call's record
 * (and its budget hold) waits for its count. One count is at most a few million characters (a
 * few seconds on a slow machine); a thread silent this long is stuck, and is let go.
 */
export const STALL_MS = 30_000

interface Job {
  encoding: EncodingName
  samples: Sample[]
  chars: number
  resolve(counts: number[]): void
}

/** Tokens of a text from its length alone (about 4 characters a token). */
export function roughCount(s: Sample): number {
  return Math.ceil(s.total / CHARS_PER_TOKEN)
}

/**
 * Counts tokens for estimates without ever holding up the event loop. With the built thread
 * (out/main/estimate-worker.js) the counting happens there; without it (run from the sources,
 * or the thread failed) it runs on the main thread a slice of at most ~2 ms at a time. Either
 * way each text costs time linear in its length, bounded (./token-count.ts), and the work
 * waiting is bounded too: past `MAX_QUEUED_CHARS`, or when `settleNow()` is called at
 * shutdown, a call's tokens are taken from its length.
 */
export class Estimator {
  private worker: Worker | null = null
  private readonly waiting = new Map<number, Job>()
  private nextId = 0
  private queuedChars = 0
  /** Main-thread mode: jobs not yet counted, and the counters loaded here. */
  private readonly local: Job[] = []
  private running = false
  private readonly counts = new Map<EncodingName, Promise<Count>>()
  /** Fires when the thread has answered nothing for `stallMs` while counts wait (`stalled`). */
  private watchdog: NodeJS.Timeout | null = null
  private readonly stallMs: number

  constructor(script?: URL | string, opts: { stallMs?: number } = {}) {
    this.stallMs = opts.stallMs ?? STALL_MS
    const path = typeof script === 'string' ? script : script ? fileURLToPath(script) : undefined
    if (path && existsSync(path)) {
      try {
        this.worker = new Worker(path)
        this.worker.unref()
        this.worker.on('message', (r: CountReply) => this.answered(r))
        this.worker.on('error', () => this.lost())
        this.worker.on('exit', () => this.lost())
      } catch {
        this.worker = null
      }
    }
  }

  /** True when counting happens on the estimate thread. */
  get threaded(): boolean {
    return this.worker !== null
  }

  /** Starts loading an encoding, so the first estimate does not wait for it. */
  warm(encoding: EncodingName): void {
    if (this.worker) this.worker.postMessage({ type: 'warm', encoding } satisfies CountRequest)
    else void this.countFor(encoding).catch(() => {})
  }

  /** Token counts of `samples`, in order. Never rejects. */
  count(encoding: EncodingName, samples: Sample[]): Promise<number[]> {
    let chars = 0
    for (const s of samples) chars += s.text.length
    if (this.queuedChars + chars > MAX_QUEUED_CHARS) return Promise.resolve(samples.map(roughCount))
    return new Promise((resolve) => {
      const job: Job = { encoding, samples, chars, resolve }
      this.queuedChars += chars
      if (this.worker) {
        const id = ++this.nextId
        this.waiting.set(id, job)
        this.worker.postMessage({ type: 'count', id, encoding, samples } satisfies CountRequest)
        this.watch()
      } else {
        this.local.push(job)
        this.run()
      }
    })
  }

  /** Answers everything still waiting at once, from its length (at shutdown, when time is up). */
  settleNow(): void {
    const jobs = [...this.waiting.values(), ...this.local]
    this.waiting.clear()
    this.local.length = 0
    for (const j of jobs) this.done(j, j.samples.map(roughCount))
  }

  close(): void {
    this.unwatch()
    this.settleNow()
    const w = this.worker
    this.worker = null
    if (w) void w.terminate()
  }

  private done(job: Job, counts: number[]): void {
    this.queuedChars -= job.chars
    job.resolve(counts)
  }

  private answered(r: CountReply): void {
    const job = this.waiting.get(r.id)
    if (!job) return
    this.waiting.delete(r.id)
    // An answer: the thread is alive; the next count waiting gets the whole time again.
    this.unwatch()
    if (this.waiting.size > 0) this.watch()
    this.done(job, r.counts ?? job.samples.map(roughCount))
  }

  private watch(): void {
    if (this.watchdog) return
    this.watchdog = setTimeout(() => this.stalled(), this.stallMs)
    this.watchdog.unref()
  }

  private unwatch(): void {
    if (this.watchdog) clearTimeout(this.watchdog)
    this.watchdog = null
  }

  /**
   * The thread is alive but answers nothing (a tokenizer load that never settles): it is ended,
   * what it had is answered from its length (counting it here could stall the same way), and
   * what comes next is counted on the main thread.
   */
  private stalled(): void {
    this.watchdog = null
    const w = this.worker
    if (!w || this.waiting.size === 0) return
    this.worker = null
    void w.terminate()
    const jobs = [...this.waiting.values()]
    this.waiting.clear()
    for (const j of jobs) this.done(j, j.samples.map(roughCount))
  }

  /** The thread failed or exited: what it had is counted here instead, and so is what comes next. */
  private lost(): void {
    if (!this.worker) return
    this.unwatch()
    this.worker = null
    const jobs = [...this.waiting.values()]
    this.waiting.clear()
    this.local.push(...jobs)
    this.run()
  }

  private countFor(encoding: EncodingName): Promise<Count> {
    let c = this.counts.get(encoding)
    if (!c) {
      c = loadCount(encoding)
      this.counts.set(encoding, c)
    }
    return c
  }

  /** Main-thread mode: counts the queued jobs one slice at a time, yielding between slices. */
  private run(): void {
    if (this.running) return
    this.running = true
    void (async () => {
      try {
        while (this.local.length > 0) {
          const job = this.local[0]
          let count: Count
          try {
            count = await this.countFor(job.encoding)
          } catch {
            this.local.shift()
            this.done(job, job.samples.map(roughCount))
            continue
          }
          const counters = job.samples.map((s) => new PieceCounter(count, s))
          for (const c of counters) {
            while (!c.step(SLICE_MS)) {
              await new Promise<void>((r) => setImmediate(r))
              if (this.local[0] !== job) break // settled meanwhile
            }
            if (this.local[0] !== job) break
          }
          if (this.local[0] !== job) continue
          this.local.shift()
          this.done(job, counters.map((c) => c.result()))
        }
      } finally {
        this.running = false
      }
    })()
  }
}

let shared: Estimator | null = null
let sharedScript: URL | string | undefined

/**
 * Uses the built estimate thread at `script` for the process's estimates (the entry points pass
 * it). The thread starts with the first estimate (or tokenizer warm-up) that needs it, not here:
 * most calls carry their usage, and a thread that never counts costs start-up time and ~10 MB.
 */
export function useEstimateThread(script: URL | string | undefined): void {
  if (!script || (String(script) === String(sharedScript) && (shared === null || shared.threaded))) return
  const old = shared
  sharedScript = script
  shared = null
  // Anything the old one still had is answered from its length rather than lost.
  old?.close()
}

/** The process's estimator: on the estimate thread when one was given, else on the main thread in slices. */
export function estimator(): Estimator {
  shared ??= new Estimator(sharedScript)
  return shared
}

/** True once the process's estimator exists (its thread, when it has one, is running). */
export function estimatorStarted(): boolean {
  return shared !== null
}

/** Answers every estimate still waiting from its length (shutdown); starts nothing when none was ever asked for. */
export function settleEstimates(): void {
  shared?.settleNow()
}
