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
}

interface UndiciRequestMessage {
  request: object
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
  private readonly sent = new WeakMap<object, { provider: string; at: number }>()
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
  }

  /** Runs the handling of one proxied call inside its timing scope. */
  readonly run = (provider: string, handle: () => void): void => {
    this.scope.run({ provider, arrival: performance.now() }, handle)
  }

  private readonly onCreate = (msg: unknown): void => {
    const start = this.scope.getStore()
    if (!start) return
    const now = performance.now()
    this.added.labels(start.provider).observe((now - start.arrival) / 1000)
    this.sent.set((msg as UndiciRequestMessage).request, { provider: start.provider, at: now })
  }

  private readonly onHeaders = (msg: unknown): void => {
    const req = (msg as UndiciRequestMessage).request
    const s = this.sent.get(req)
    if (!s) return
    this.sent.delete(req)
    this.firstByte.labels(s.provider).observe((performance.now() - s.at) / 1000)
  }

  close(): void {
    diagnostics.unsubscribe('undici:request:create', this.onCreate)
    diagnostics.unsubscribe('undici:request:headers', this.onHeaders)
  }
}
