import type { Admission, CallGate } from '../gate'
import { createRecorder, type RecorderOptions } from './recording'
import type { CallState } from './state'

/**
 * The life every metered call goes through, whichever path carries it (HTTP, WebSocket):
 * `begin` counts it as under way, `admit` asks the gate (budgets), `finish` records it exactly
 * once. `drain` waits for the calls under way (shutdown).
 */
export interface CallLifecycle {
  /**
   * Counts a request as under way before it is a call (its body still arriving, prices loading),
   * so a shutdown waits for it; each `arrive` is matched by exactly one `leave`.
   */
  arrive(): void
  leave(): void
  begin<T extends CallState>(s: T): T
  /**
   * The gate's decision, stored on the call (so `finish` settles it). Throws (or rejects) when
   * the gate fails; a promise only when the gate needs the database (shared budget state).
   */
  admit(s: CallState): Admission | Promise<Admission>
  finish(s: CallState): void
  readonly active: number
  drain(timeoutMs: number): Promise<boolean>
}

export interface LifecycleOptions extends RecorderOptions {
  /** Read on every call, so budgets can be swapped in at runtime. */
  gate: () => CallGate
}

export function createCallLifecycle(opts: LifecycleOptions): CallLifecycle {
  let active = 0
  let idleWaiters: (() => void)[] = []
  const leave = (): void => {
    active--
    if (active === 0) {
      const w = idleWaiters
      idleWaiters = []
      for (const f of w) f()
    }
  }
  const finish = createRecorder(opts, leave)
  return {
    arrive() {
      active++
    },
    leave,
    begin(s) {
      active++
      s.recordBatch = opts.recordBatch
      return s
    },
    admit(s) {
      const admission = opts.gate().admit(s.ctx)
      if (admission.pending) {
        return admission.pending.then((a) => {
          s.admission = a
          return a
        })
      }
      s.admission = admission
      return admission
    },
    finish,
    get active() {
      return active
    },
    drain(timeoutMs) {
      if (active === 0) return Promise.resolve(true)
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), timeoutMs)
        idleWaiters.push(() => {
          clearTimeout(timer)
          resolve(true)
        })
      })
    },
  }
}
