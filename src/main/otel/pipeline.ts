import { randomUUID } from 'node:crypto'
import type { Agent } from 'node:http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import type { MeterProvider } from '@opentelemetry/sdk-metrics'
import type { OtelHealth } from '../../shared/api'
import type { CallRecord } from '../ledger/record'
import type { MovedCost } from '../pricing/moves'
import { bareUrl } from '../storage/url'
import { CallMetrics } from './call-metrics'
import { createInstruments } from './instruments'
import { metricProvider } from './metric-export'
import { SpanQueue } from './span-queue'

export interface OtelOptions {
  /** Collector base URL; `/v1/traces` and `/v1/metrics` are appended. */
  endpoint: string
  headers: Record<string, string>
  intervalMs: number
  timeoutMs: number
  maxQueue: number
  traces: boolean
  metrics: boolean
  version: string
  /** The metrics' node:http agent (behind a proxy: http/egress.ts; its connections are closed with an export given up); null: a plain keep-alive one. */
  agent?: Promise<Agent> | null
  /** The spans' own agent of the same kind (its connections are closed with an export given up); null: a plain keep-alive one. */
  spanAgent?: Promise<Agent> | null
  /** The export goes through a proxy: opening the tunnel may take `timeoutMs` before the export's own. */
  proxied?: boolean
  /** Where a collector's partial refusal of an export is logged. */
  warn?: (message: string) => void
}

/** What `/api/health` shows under `otel`. */
export type OtelStatus = OtelHealth

/** How often queued calls become metric points and spans. */
const TICK_MS = 1000

/**
 * OTLP/HTTP (JSON) export of every recorded call, off the hot path: the ledger listener only
 * pushes the call onto a queue. Once a second the queue is drained: each call is added to the
 * metric instruments (exported every `intervalMs` by the SDK's periodic reader: metric-export.ts,
 * call-metrics.ts) and moved to a bounded backlog of spans to send (span-queue.ts); at most one span
 * export is in flight at a time, in batches of 512. When the collector is slow or unreachable the
 * backlog fills up to `maxQueue` and further calls are dropped and counted, never held without
 * bound, never retried on the event loop; the proxy does not wait for any of it.
 */
export class OtelPipeline {
  private incoming: CallRecord[] = []
  private readonly timer: NodeJS.Timeout
  private readonly spans: SpanQueue | null = null
  private readonly meterProvider: MeterProvider | null = null
  private readonly metrics: CallMetrics | null = null
  readonly status: OtelStatus

  constructor(opts: OtelOptions) {
    this.status = {
      // Shown by /api/health, which needs no token: without the credentials a URL may carry.
      endpoint: bareUrl(opts.endpoint),
      queued: 0,
      exported_spans: 0,
      dropped_spans: 0,
      metric_exports: 0,
      failed_metric_exports: 0,
      last_error: null,
    }
    // Each process its own writer: a metric stream is named by its resource with its points'
    // attributes, and two Burnrates sending to one collector (a team's instances on one PostgreSQL,
    // every developer's own) made the same streams, their cumulative sums alternating in them.
    const resource = resourceFromAttributes({ 'service.name': 'burnrate', 'service.version': opts.version, 'service.instance.id': randomUUID() })
    if (opts.traces) this.spans = new SpanQueue(opts, resource, this.status)
    if (opts.metrics) {
      this.meterProvider = metricProvider(opts, resource, this.status)
      this.metrics = new CallMetrics(createInstruments(this.meterProvider.getMeter('burnrate', opts.version)))
    }
    this.timer = setInterval(() => this.tick(), TICK_MS)
    this.timer.unref()
  }

  /** The ledger listener: one push; everything else happens on the next tick. */
  readonly observe = (call: CallRecord): void => {
    this.incoming.push(call)
  }

  /** Recorded calls' costs and tokens that moved (re-pricing, a background response's real usage): see CallMetrics.moved. */
  readonly moved = (moves: readonly MovedCost[]): void => {
    this.metrics?.moved(moves)
  }

  /** Metric points for the calls that came in, and spans for as many as the backlog takes; then a span export if none is under way. */
  tick(): void {
    const calls = this.incoming
    this.incoming = []
    this.metrics?.recordAll(calls)
    this.spans?.add(calls)
  }

  /**
   * Exports what is left (waiting at most `waitMs`), then stops. Called again while it closes (a
   * second signal during a stop's own close), it takes what was recorded since and waits for the
   * same close: a second shutdown of the SDK's providers returns at once, before their last export.
   */
  close(waitMs = 2000): Promise<void> {
    clearInterval(this.timer)
    if (this.closing) this.tick()
    this.closing ??= this.shutdown(waitMs)
    return this.closing
  }

  private closing: Promise<void> | null = null

  private async shutdown(waitMs: number): Promise<void> {
    this.tick()
    const deadline = Date.now() + waitMs
    // The metric points go at once, beside the spans' drain: after it (a backlog of spans, a
    // collector slow to take them), their last export had none of the wait left and the process
    // exited without it. The shutdown's own export follows it, with what a second close recorded.
    const meters = this.meterProvider
    const flushed = meters && this.spans ? meters.forceFlush().catch(() => {}) : Promise.resolve()
    await this.spans?.drain(deadline)
    const stop = Promise.allSettled([meters && flushed.then(() => meters.shutdown()), this.spans?.shutdown()])
    await Promise.race([stop, new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now())).unref())])
  }
}
