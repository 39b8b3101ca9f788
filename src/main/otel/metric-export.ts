import type { Agent } from 'node:http'
import { OTLPMetricExporterBase, type OTLPMetricExporterOptions } from '@opentelemetry/exporter-metrics-otlp-http'
import { type OTLPExporterNodeConfigBase, convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http'
import { JsonMetricsSerializer, MetricsExporterMetricsHelper } from '@opentelemetry/otlp-transformer'
import type { Resource } from '@opentelemetry/resources'
import { MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter } from '@opentelemetry/sdk-metrics'
import { type Refused, describeFailure, directAgent, keepingRefused, signalUrl } from './collector'
import type { OtelOptions, OtelStatus } from './pipeline'

/** Attribute sets an instrument keeps apart before the SDK folds new ones into `otel.metric.overflow` (README). */
export const OTEL_SERIES_LIMIT = 20_000

/**
 * The metrics' provider, exported every `intervalMs` by the SDK's periodic reader, each export
 * counted in `status`. Cumulative unless OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE asks for
 * delta (a backend such as Dynatrace takes nothing else); then a failed export's interval is lost (README).
 */
/** `OTLPMetricExporter` (OTLP/HTTP, JSON), with what the collector refused of each export (a partial success) kept. */
class MetricExporter extends OTLPMetricExporterBase {
  /** The data points the collector refused of the export whose callback runs now, or null. */
  readonly takeRefused: () => Refused | null

  constructor(config: OTLPExporterNodeConfigBase & OTLPMetricExporterOptions) {
    const kept = keepingRefused(JsonMetricsSerializer, 'rejectedDataPoints')
    super(
      createOtlpHttpExportDelegate(
        convertLegacyHttpOptions(config, 'METRICS', 'v1/metrics', { 'Content-Type': 'application/json' }),
        kept.serializer,
        'otlp_http_metric_exporter',
        MetricsExporterMetricsHelper,
        undefined,
      ),
      config,
    )
    this.takeRefused = kept.take
  }
}

export function metricProvider(opts: OtelOptions, resource: Resource, status: OtelStatus): MeterProvider {
  // An agent of the metrics' own: an export given up (guardedExporter) closes its connections.
  const agent = opts.agent ?? directAgent(opts.endpoint)
  let made: Agent | null = null
  agent.then(
    (a) => (made = a),
    () => {},
  )
  const exportTimeoutMs = Math.min(opts.timeoutMs, opts.intervalMs)
  const inner = new MetricExporter({ headers: opts.headers, timeoutMillis: opts.timeoutMs, httpAgentOptions: () => agent, url: signalUrl(opts.endpoint, '/v1/metrics') })
  // The longest an export may take (behind a proxy, opening the tunnel too): the reader stops
  // waiting sooner, at the interval, but an export that ends within this is still delivered.
  const exporter = guardedExporter(inner, opts.timeoutMs * (opts.proxied ? 2 : 1), status, () => made, opts.warn)
  return new MeterProvider({
    resource,
    readers: [
      new PeriodicExportingMetricReader({
        exporter,
        exportIntervalMillis: opts.intervalMs,
        exportTimeoutMillis: exportTimeoutMs,
        // The SDK's default, 2,000 attribute sets an instrument, is below what Burnrate's own
        // bounds allow (models x agents x tenants): past it each new set's cost would lose its
        // model, agent and tenant to one `otel.metric.overflow` point.
        cardinalityLimits: { default: OTEL_SERIES_LIMIT },
      }),
    ],
  })
}

/**
 * The metric exporter, its exports counted in the health status. The SDK's periodic reader stops
 * waiting for an export after its timeout but does not stop the export, and the exporter's own
 * timeout is a limit on silence: a collector (or a proxy in front of it) that answers a byte at a
 * time held each export's connection open while the next interval's went beside it, one more
 * connection every interval, without end. So an export still going after `limitMs`, or when the
 * next one comes, is given up here: failed, and its connection closed (the agent's, once made).
 */
function guardedExporter(inner: MetricExporter, limitMs: number, status: OtelStatus, agent: () => Agent | null, warn?: (message: string) => void): PushMetricExporter {
  /** The metric export under way: given up when its time is out, or when the next one comes first. */
  let under: { giveUp(why?: string): void } | null = null
  return {
    export: (metrics, done) => {
      // The one before, if still going: its connection is the only one the agent holds.
      under?.giveUp('the next export was due')
      let over = false
      const finish = (r: { code: number; error?: Error }, refused?: Refused | null): void => {
        if (over) return
        over = true
        clearTimeout(guard)
        if (under === current) under = null
        if (r.code === 0 && refused) {
          // Taken in part (OTLP partial success, HTTP 200): the refused points are not at the collector.
          status.failed_metric_exports++
          status.last_error = `metric export to ${status.endpoint}: the collector refused ${refused.count} data points${refused.why ? `: ${refused.why}` : ''}`
          warn?.(`otel: ${status.last_error}`)
        } else if (r.code === 0) status.metric_exports++
        else {
          status.failed_metric_exports++
          status.last_error = `metric export to ${status.endpoint} failed: ${describeFailure(r.error)}`
        }
        done(r)
      }
      const current = {
        giveUp: (why = `no answer within ${limitMs} ms`): void => {
          if (over) return
          finish({ code: 1, error: new Error(why) })
          agent()?.destroy()
        },
      }
      under = current
      const guard = setTimeout(() => current.giveUp(), limitMs)
      guard.unref()
      try {
        // What the answer refused is read at once, in its own callback, even for an export given up.
        inner.export(metrics, (r) => finish(r, inner.takeRefused()))
      } catch (err) {
        finish({ code: 1, error: err as Error })
      }
    },
    forceFlush: () => inner.forceFlush(),
    shutdown: () => inner.shutdown(),
    selectAggregationTemporality: (t) => inner.selectAggregationTemporality(t),
    selectAggregation: (t) => inner.selectAggregation(t),
  }
}
