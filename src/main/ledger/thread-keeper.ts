import type { ThreadHook } from './types'
import { WriteThread } from './write-thread'

/**
 * The write thread starts with the first batch and ends after this long without a request. It
 * holds ~10 MiB while it runs, and starting one costs 60-160 ms of CPU (measured on a busy 2-core
 * machine: a new isolate, its modules, the database opened, its code cold), hundreds of calls'
 * worth of metering. An agent's calls come 5-30 s apart (the model's answer, then its tools), so
 * it lives as long as the idle collection waits (server/idle-gc.ts): the end of a session, not a
 * pause between two calls.
 */
export const THREAD_IDLE_MS = 30_000

/**
 * The SQLite ledger's write thread over its life (./write-thread.ts is one thread's handle): none
 * while the server is idle, started for a batch (`use`), ended once idle (`idleLater`), and given
 * up for good when one fails or does not answer (`giveUp`: the ledger writes on its own thread
 * from then on). Each new thread is given the hooks registered so far (`addHook`) before its first
 * batch.
 */
export class ThreadKeeper {
  /** The write thread's script while batches may go to one (null: none given, or one failed). */
  private script: string | null
  private thread: WriteThread | null = null
  private readonly hooks: ThreadHook[] = []
  private idle: NodeJS.Timeout | null = null
  private closed = false

  constructor(
    script: URL | string | undefined,
    private readonly dbFile: string,
    private readonly idleMs: number,
    /** Whether the thread still has work the ledger waits on (it is not ended while it has). */
    private readonly busy: (t: WriteThread) => boolean,
  ) {
    this.script = WriteThread.usable(script, dbFile)
  }

  /** True while batches may go to a write thread (one was given and none has failed). */
  get usable(): boolean {
    return this.script !== null
  }

  /** The running write thread, if one is running (none is started). */
  get running(): WriteThread | null {
    return this.thread
  }

  /** Gives every write thread `hook`, the running one at once. False when no thread is usable (the hook runs on the ledger's thread only). */
  addHook(hook: ThreadHook): boolean {
    if (!this.script) return false
    this.hooks.push(hook)
    this.thread?.send({ type: hook })
    return true
  }

  /** The write thread, started if none runs; null when the ledger's thread writes (none given, or one failed). */
  use(): WriteThread | null {
    if (this.idle) {
      clearTimeout(this.idle)
      this.idle = null
    }
    let t = this.thread
    if (t?.broken) {
      // It failed or exited: from now on the ledger's thread writes, as when there is none.
      this.giveUp()
      return null
    }
    if (!t && this.script && !this.closed) {
      t = WriteThread.start(this.script, this.dbFile)
      if (!t) {
        this.script = null
        return null
      }
      for (const hook of this.hooks) t.send({ type: hook })
      this.thread = t
    }
    return t
  }

  /** Ends the write thread once it has had nothing to do for the idle time (the next batch starts another). */
  idleLater(): void {
    if (this.idle || !this.thread || this.closed) return
    this.idle = setTimeout(() => {
      this.idle = null
      const t = this.thread
      if (!t) return
      if (this.busy(t) || t.busy) {
        this.idleLater()
        return
      }
      this.thread = null
      t.end()
    }, this.idleMs)
    this.idle.unref()
  }

  /** Stops the thread without waiting and never starts another: the ledger's thread writes from now on. */
  giveUp(): void {
    const t = this.thread
    this.thread = null
    this.script = null
    t?.close(0)
  }

  /** Ends the running thread (waiting for it to close the database) and starts none again. */
  close(): void {
    this.closed = true
    if (this.idle) clearTimeout(this.idle)
    this.idle = null
    this.thread?.close()
    this.thread = null
  }
}
