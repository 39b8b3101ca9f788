import type { Agent } from 'node:http'
import { SpanKind, SpanStatusCode } from '@opentelemetry/api'
import type { Resource } from '@opentelemetry/resources'
import { type ReadableSpan, type SpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'
import type { CallRecord } from '../ledger/record'
import { type Refused, describeFailure, directAgent, signalUrl } from './collector'
import type { OtelOptions, OtelStatus } from './pipeline'
import { errorType, spanAttributes, spanName } from './semconv'
import { SpanExporter } from './span-exporter'

/** Spans per OTLP request. */
const BATCH = 512

/** Ended spans, handed to the exporter by the queue itself (not the SDK's batch processor). */
class Collect implements SpanProcessor {
  spans: ReadableSpan[] = []
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    this.spans.push(span)
  }
  forceFlush(): Promise<void> {
    return Promise.resolve()
  }
  shutdown(): Promise<void> {
    return Promise.resolve()
  }
}

/**
 * One span per call: a bounded backlog of calls (up to `maxQueue`; past it they are dropped and
 * counted), made into spans and sent in batches of 512, at most one export in flight at a time.
 */
export class SpanQueue {
  private backlog: CallRecord[] = []
  private exporting = false
  private readonly collect = new Collect()
  private readonly provider: TracerProvider
  private readonly exporter: SpanExporter
  private readonly agent: Promise<Agent>

  constructor(
    private readonly opts: OtelOptions,
    resource: Resource,
    private readonly status: OtelStatus,
  ) {
    // An agent of the spans' own: the guard of an export (exportNext) closes its connections.
    const agent = opts.spanAgent ?? directAgent(opts.endpoint)
    this.agent = agent
    this.exporter = new SpanExporter({ headers: opts.headers, timeoutMillis: opts.timeoutMs, httpAgentOptions: () => agent, url: signalUrl(opts.endpoint, '/v1/traces') })
    this.provider = new TracerProvider({ resource, spanProcessors: [this.collect] })
  }

  /** A tick's calls, as many as the backlog takes; then an export if none is under way. */
  add(calls: readonly CallRecord[]): void {
    const room = this.opts.maxQueue - this.backlog.length
    if (calls.length > room) {
      this.status.dropped_spans += calls.length - Math.max(0, room)
      if (room > 0) this.backlog.push(...calls.slice(0, room))
    } else if (calls.length > 0) this.backlog.push(...calls)
    this.status.queued = this.backlog.length
    if (!this.exporting && this.backlog.length > 0) this.exportNext()
  }

  /** Sends what is left, one batch after another, until `deadline` (a time in ms). */
  async drain(deadline: number): Promise<void> {
    while ((this.exporting || this.backlog.length > 0) && Date.now() < deadline) {
      if (!this.exporting) this.exportNext()
      await new Promise((r) => setTimeout(r, 20))
    }
  }

  /** Stops the SDK's provider and the exporter: settled once both are. */
  shutdown(): Promise<unknown> {
    return Promise.allSettled([this.provider.shutdown(), this.exporter.shutdown()])
  }

  /** One batch of the backlog as spans, to the collector; the next goes when this one is done. */
  private exportNext(): void {
    const calls = this.backlog.splice(0, BATCH)
    this.status.queued = this.backlog.length
    const tracer = this.provider.getTracer('burnrate', this.opts.version)
    for (const c of calls) {
      const span = tracer.startSpan(spanName(c), { kind: SpanKind.CLIENT, startTime: c.ts, attributes: spanAttributes(c) })
      if (errorType(c)) span.setStatus({ code: SpanStatusCode.ERROR })
      span.end(c.ts + c.latency_ms)
    }
    const spans = this.collect.spans
    this.collect.spans = []
    this.exporting = true
    let done = false
    const finish = (ok: boolean, error?: unknown, refused?: Refused | null): void => {
      if (done) return
      done = true
      clearTimeout(guard)
      this.exporting = false
      if (ok && refused) {
        // Taken in part (OTLP partial success, HTTP 200): the refused spans are not at the collector.
        const count = Math.min(refused.count, spans.length)
        this.status.exported_spans += spans.length - count
        this.status.dropped_spans += count
        this.status.last_error = `span export to ${this.status.endpoint}: the collector refused ${count} of ${spans.length} spans${refused.why ? `: ${refused.why}` : ''}`
        this.opts.warn?.(`otel: ${this.status.last_error}`)
      } else if (ok) this.status.exported_spans += spans.length
      else {
        this.status.dropped_spans += spans.length
        this.status.last_error = `span export to ${this.status.endpoint} failed: ${describeFailure(error)}`
      }
    }
    // The exporter's own timeout is a limit on silence, not on the export: a collector (or a proxy in
    // front of it) that answers a byte at a time holds it for as long as it likes. Past the longest an
    // export may take (behind a proxy, opening the tunnel too), it is given up and its connection
    // closed: else the next export went beside it, one more connection held open each time, without end.
    const limit = this.opts.timeoutMs * (this.opts.proxied ? 2 : 1) + 5000
    const guard = setTimeout(() => {
      finish(false, new Error(`no answer within ${Math.round(limit / 1000)} s`))
      void this.agent.then((a) => a.destroy(), () => {})
    }, limit)
    guard.unref()
    try {
      // What the answer refused is read at once, in its own callback, even for an export given up.
      this.exporter.export(spans, (r) => finish(r.code === 0, r.error, this.exporter.takeRefused()))
    } catch (err) {
      finish(false, err)
    }
  }
}
