import { performance } from 'node:perf_hooks'
import type { HttpCall } from './state'

/**
 * Non-streamed answers read on for their bill after their client left (the dispatch handler,
 * ./dispatch-handler.ts, hands them here), and their set, one per proxy: their calls are under way
 * until they end, and a stop ends them (recorded 499 with what came) rather than wait for an
 * upstream that is slow to finish.
 */

export interface LeftAnswer {
  /** Ends the answer's call now (recorded with what came) and stops its upstream exchange. */
  stop(): void
}

export class LeftAnswers {
  private readonly answers = new Set<LeftAnswer>()

  add(a: LeftAnswer): void {
    this.answers.add(a)
  }

  delete(a: LeftAnswer): void {
    this.answers.delete(a)
  }

  /** Ends every answer still being read. */
  stopAll(): void {
    for (const a of [...this.answers]) a.stop()
  }
}

/**
 * Whether the answer of `s`, whose client has left, is read on: a non-streamed answer its client
 * left after it began. The provider generated it whole, and billed it, before its first byte, and
 * its usage comes at its end. A stream is stopped instead: its provider stops generating, and
 * billing, when it is.
 */
export function readsOn(s: HttpCall): boolean {
  return s.responseStarted && !s.streamed && !s.ctx.shape.stream && !!s.json && s.upstreamStatus >= 200 && s.upstreamStatus < 300
}

/**
 * An answer read on after its client left (`readsOn`): sent nowhere, metered only, bounded by
 * upstream.idle_timeout_ms of silence (the dispatch handler's) and by a stop; its call is recorded
 * 499 at the answer's own usage when it ends, or at what came if it is cut.
 */
export class ReadOn implements LeftAnswer {
  constructor(
    private readonly s: HttpCall,
    private readonly left: LeftAnswers | undefined,
    private readonly finish: (s: HttpCall) => void,
  ) {
    s.clientLeftFirst = true
    left?.add(this)
  }

  /** A chunk of the answer: metered, after what is still pending. */
  meter(chunk: Buffer): boolean {
    const s = this.s
    s.lastData = performance.now()
    s.drainTap?.()
    s.tap?.write(chunk)
    return true
  }

  /** The answer ended (whole, cut or stalled): recorded 499 with what came of it. */
  end(): void {
    this.left?.delete(this)
    this.finish(this.s)
  }

  /** Burnrate is stopping: the answer is not waited for. */
  stop(): void {
    this.end()
    this.s.abort?.()
  }
}
