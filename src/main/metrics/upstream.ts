import { AsyncLocalStorage } from 'node:async_hooks'
import diagnostics from 'node:diagnostics_channel'
import { performance } from 'node:perf_hooks'
import { Histogram, type Registry } from 'prom-client'

/** Burnrate's own time before a call goes upstream: well under a millisecond when all is well. */
export const ADDED_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]
/** Provider time to first byte: tens of milliseconds to minutes for a long prompt. */
export const FIRST_BYTE_BUCKETS = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160]

interface CallStart {
  provider: string
  /** performance.now() when the request's headers arrived. */
  arrival: number
  /** The origin of the call's first request upstream, once it went (undefined before). */
  sentTo?: string
}

interface UndiciRequestMessage {
  request: { origin?: unknown }
}

/**
 * Times each proxied call's way upstream without touching the hot path's code: the proxy's
 * upstream requests go through undici, which publishes `undici:request:create` (the request
 * is handed to the connection pool) and `undici:request:headers` (the provider's response
 * headers arrived) on node:diagnostics_channel. A call is tied to its upstream request by an
 * AsyncLocalStorage scope around the proxy's handling of it (`run`), so requests made by
 * anything else in the process (the OTLP exporter, fetch) are never counted.
 *
 * - `burnrate_added_latency_seconds`: from the call's arrival to its request going upstream
 *   (reading the body, attribution, the budget check). Responses are streamed through as they
 *   come, so this is what Burnrate adds before the client's first byte.
 * - `burnrate_upstream_first_byte_seconds`: from the request going upstream to the provider's
 *   response headers (the provider's time to first byte, connection set-up included).
 */
export class UpstreamTiming {
  private readonly scope = new AsyncLocalStorage<CallStart>()
  private readonly sent = new WeakMap<object, { start: CallStart; at: number }>()
  private readonly added: Histogram
  private readonly firstByte: Histogram

  constructor(registry: Registry) {
    this.added = new Histogram({
      name: 'burnrate_added_latency_seconds',
      help: "Burnrate's time from a call's arrival to its request going upstream (body read, attribution, budget check).",
      labelNames: ['provider'],
      buckets: ADDED_BUCKETS,
      registers: [registry],
    })
    this.firstByte = new Histogram({
      name: 'burnrate_upstream_first_byte_seconds',
      help: "Provider's time from the request going upstream to its response headers.",
      labelNames: ['provider'],
      buckets: FIRST_BYTE_BUCKETS,
      registers: [registry],
    })
    diagnostics.subscribe('undici:request:create', this.onCreate)
    diagnostics.subscribe('undici:request:headers', this.onHeaders)
    diagnostics.subscribe('undici:request:error', this.onError)
  }

  /** Runs the handling of one proxied call inside its timing scope. */
  readonly run = (provider: string, handle: () => void): void => {
    this.scope.run({ provider, arrival: performance.now() }, handle)
  }

  /**
   * A request created in a call's scope: its first is the call's request upstream, and Burnrate's
   * time is up to it. Anything later in the scope is not the call's (what it set off: a timer, a
   * send, carries the scope on).
   */
  private readonly onCreate = (msg: unknown): void => {
    const req = (msg as UndiciRequestMessage).request
    const now = performance.now()
    const again = this.sendingAgain
    if (again) {
      this.sendingAgain = null
      if (String(req.origin ?? '') === again.sentTo) {
        this.sent.set(req, { start: again, at: now })
        return
      }
    }
    const start = this.scope.getStore()
    if (!start || start.sentTo !== undefined) return
    start.sentTo = String(req.origin ?? '')
    this.added.labels(start.provider).observe((now - start.arrival) / 1000)
    this.sent.set(req, { start, at: now })
  }

  /**
   * A call's request failed before any answer. The proxy may send it once more, at once, from
   * undici's error callback (a GET whose kept-alive connection the upstream had closed:
   * ../proxy/call/retry.ts), which runs in the scope of whichever call opened that connection:
   * the request created next, in the same turn, to the same upstream, is this call's, and its
   * answer is timed from it. It is not Burnrate's time again (that was the first attempt's round trip).
   */
  private readonly onError = (msg: unknown): void => {
    const s = this.sent.get((msg as UndiciRequestMessage).request)
    if (!s) return
    this.sent.delete((msg as UndiciRequestMessage).request)
    this.sendingAgain = s.start
    queueMicrotask(() => {
      if (this.sendingAgain === s.start) this.sendingAgain = null
    })
  }

  /** The call whose request failed in this turn (onError), until its next request is created. */
  private sendingAgain: CallStart | null = null

  private readonly onHeaders = (msg: unknown): void => {
    const req = (msg as UndiciRequestMessage).request
    const s = this.sent.get(req)
    if (!s) return
    this.sent.delete(req)
    this.firstByte.labels(s.start.provider).observe((performance.now() - s.at) / 1000)
  }

  close(): void {
    diagnostics.unsubscribe('undici:request:create', this.onCreate)
    diagnostics.unsubscribe('undici:request:headers', this.onHeaders)
    diagnostics.unsubscribe('undici:request:error', this.onError)
  }
}
