import type { IncomingHttpHeaders } from 'node:http'
import { codexErrorHeaders, codexEventHeaders } from '../../plans/codex'
import type { HeadersObserver } from '../call/forward'
import type { CallState } from '../call/state'
import { errorStatus } from './frames'

/**
 * What a Responses socket says of the plan's windows (a ChatGPT plan's allowance: ../../plans/codex.ts),
 * shown to the server's headers observer as an HTTP call's answer headers are: the upstream's
 * upgrade answer with the first call admitted (it needs the call's credential), Codex's
 * `codex.rate_limits` events, and the headers of a refusal in an `error` frame.
 */
export class PlanHeaders {
  constructor(
    private readonly observe: HeadersObserver | undefined,
    /** The upstream's upgrade answer headers, until the first call has been shown them. */
    private upgrade: IncomingHttpHeaders | null,
    /** When the upgrade answer came (the socket was opened): what its headers say was true then, not at the first call. */
    private readonly upgradeAt = Date.now(),
  ) {}

  /** A call was admitted and its frame goes upstream: the first one is shown the upgrade answer. */
  admitted(s: CallState): void {
    if (this.upgrade) {
      this.see(s, 101, this.upgrade, this.upgradeAt)
      this.upgrade = null
    }
  }

  /** A `codex.rate_limits` or `error` frame from the upstream, in call `s`'s response. */
  frame(s: CallState, type: string, text: string): void {
    if (!this.observe) return
    if (type === 'codex.rate_limits') {
      const h = codexEventHeaders(text)
      if (h) this.see(s, 200, h)
    } else if (type === 'error') {
      // A refusal's own headers (a plan out of its allowance: its windows at 100%).
      const h = codexErrorHeaders(text)
      if (h) this.see(s, errorStatus(text), h)
    }
  }

  private see(s: CallState, status: number, headers: IncomingHttpHeaders, at?: number): void {
    try {
      this.observe?.(s, status, headers, at)
    } catch {
      // advisory: the relay goes on
    }
  }
}
