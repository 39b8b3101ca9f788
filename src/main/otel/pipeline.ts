import { randomUUID } from 'node:crypto'
import type { Agent } from 'node:http'
import { SpanKind, SpanStatusCode, type Attributes, type Counter, type Histogram } from '@opentelemetry/api'
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter } from '@opentelemetry/sdk-metrics'
import { type ReadableSpan, type SpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'
import type { CallBilling, OtelHealth } from '../../shared/api'
import type { CallRecord } from '../ledger/record'
import type { MovedCost } from '../pricing/moves'
import { BoundedLabel, billingLabel } from '../metrics/labels'
import { bareUrl } from '../storage/url'
import { BURNRATE, ERROR_TYPE, GEN_AI, errorType, operationName, providerName, spanAttributes, spanName } from './semconv'
import { SpanExporter } from './span-exporter'

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
}

/** What `/api/health` shows under `otel`. */
export type OtelStatus = OtelHealth

/** How often queued calls become metric points and spans. */
const TICK_MS = 1000
/** Spans per OTLP request. */
const BATCH = 512

/** `burnrate.token.type` values, in the order of a tick's token sums. */
const TOKEN_TYPES = ['input', 'output', 'cache_read', 'cache_write', 'reasoning'] as const
/** The ledger's column of each of TOKEN_TYPES (a moved call's `tokens` are keyed by them). */
const TOKEN_FIELDS = ['input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'reasoning_tokens'] as const

/** Recommended boundaries of the GenAI conventions. */
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]

/** Ended spans, handed to the exporter by the pipeline itself (not the SDK's batch processor). */
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

function describe(err: unknown): string {
  const e = err as { message?: string; code?: string | number } | undefined
  return String(e?.message ?? err ?? 'export failed').slice(0, 300)
}

/**
 * OTLP/HTTP (JSON) export of every recorded call, off the hot path: the ledger listener only
 * pushes the call onto a queue. Once a second the queue is drained: each call is added to the
 * metric instruments (exported every `intervalMs` by the SDK's periodic reader) and moved to a
 * bounded backlog of spans to send; at most one span export is in flight at a time, in
 * batches of 512. When the collector is slow or unreachable the backlog fills up to `maxQueue`
 * and further calls are dropped and counted, never held without bound, never retried on the
 * event loop; the proxy does not wait for any of it.
 */
/** Attribute sets an instrument keeps apart before the SDK folds new ones into `otel.metric.overflow` (README). */
export const OTEL_SERIES_LIMIT = 20_000

export class OtelPipeline {
  private incoming: CallRecord[] = []
  private backlog: CallRecord[] = []
  private exporting = false
  private readonly timer: NodeJS.Timeout
  private readonly collect = new Collect()
  private readonly tracerProvider: TracerProvider | null = null
  private readonly traceExporter: SpanExporter | null = null
  private readonly spanAgent: Promise<Agent> | null = null
  /** The metrics' agent, once made: an export given up closes its connections (countedMetricExporter). */
  private metricAgent: Agent | null = null
  /** The metric export under way: given up when its time is out, or when the next one comes first. */
  private metricExport: { giveUp(why?: string): void } | null = null
  private readonly meterProvider: MeterProvider | null = null
  private readonly instruments: {
    tokens: Histogram
    duration: Histogram
    cost: Counter
    costReductions: Counter
    allTokens: Counter
    tokenReductions: Counter
  } | null = null
  private readonly model = new BoundedLabel(200)
  private readonly agent = new BoundedLabel(50)
  private readonly tenant = new BoundedLabel(200)
  /** The operation is the ledger's endpoint where the conventions have no name for it: a Gemini call's is the method its client names. */
  private readonly operation = new BoundedLabel(50)
  /**
   * `error.type` on the duration histogram: Burnrate's reason, a status code, or what the provider's
   * answer named, which some APIs give as words carrying the request's figures (Mistral's
   * Conversations, Gemini's Interactions: "Prompt contains 40312 tokens…"), a new value per call.
   */
  private readonly errorType = new BoundedLabel(50)
  readonly status: OtelStatus

  constructor(private readonly opts: OtelOptions) {
    // The signal's path goes after the endpoint's own path, before its query (a collector behind a
    // gateway may want `?tenant=…`): appended to the text, it landed inside the query.
    const signal = (path: string): string => {
      const u = new URL(opts.endpoint)
      u.pathname = `${u.pathname.replace(/\/+$/, '')}${path}`
      return u.toString()
    }
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
    const common = { headers: opts.headers, timeoutMillis: opts.timeoutMs }
    if (opts.traces) {
      // An agent of the spans' own: the guard of an export (exportSpans) closes its connections.
      const spanAgent = opts.spanAgent ?? directAgent(opts.endpoint)
      this.spanAgent = spanAgent
      this.traceExporter = new SpanExporter({ ...common, httpAgentOptions: () => spanAgent, url: signal('/v1/traces') })
      this.tracerProvider = new TracerProvider({ resource, spanProcessors: [this.collect] })
    }
    if (opts.metrics) {
      // Cumulative unless OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE asks for delta (a backend
      // such as Dynatrace takes nothing else); then a failed export's interval is lost (README).
      // An agent of the metrics' own: an export given up (countedMetricExporter) closes its connections.
      const metricAgent = opts.agent ?? directAgent(opts.endpoint)
      metricAgent.then(
        (a) => (this.metricAgent = a),
        () => {},
      )
      const exportTimeoutMs = Math.min(opts.timeoutMs, opts.intervalMs)
      const inner = new OTLPMetricExporter({ ...common, httpAgentOptions: () => metricAgent, url: signal('/v1/metrics') })
      // The longest an export may take (behind a proxy, opening the tunnel too): the reader stops
      // waiting sooner, at the interval, but an export that ends within this is still delivered.
      const exporter = this.countedMetricExporter(inner, opts.timeoutMs * (opts.agent ? 2 : 1))
      this.meterProvider = new MeterProvider({
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
      const meter = this.meterProvider.getMeter('burnrate', opts.version)
      this.instruments = {
        tokens: meter.createHistogram(GEN_AI.tokenUsage, {
          description: 'Input and output tokens per call (gen_ai.token.type).',
          unit: '{token}',
          advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
        }),
        duration: meter.createHistogram(GEN_AI.duration, {
          description: "Whole call, from its arrival at Burnrate to the last byte sent to the client.",
          unit: 's',
          advice: { explicitBucketBoundaries: DURATION_BUCKETS },
        }),
        cost: meter.createCounter(GEN_AI.cost, { description: 'Cost of the calls in US dollars, plus what they cost more when re-priced or settled later.', unit: 'USD' }),
        costReductions: meter.createCounter(BURNRATE.costReductions, {
          description: 'What recorded calls cost less after they were recorded (re-priced lower), in US dollars: spend is gen_ai.usage.cost minus this.',
          unit: 'USD',
        }),
        allTokens: meter.createCounter(BURNRATE.tokens, {
          description: 'Tokens by burnrate.token.type: input, output, cache_read, cache_write, reasoning (the last three are parts of the first two).',
          unit: '{token}',
        }),
        tokenReductions: meter.createCounter(BURNRATE.tokenReductions, {
          description: 'How many tokens recorded calls have fewer after they were recorded (an estimate replaced by the real usage): the tokens are burnrate.tokens minus this.',
          unit: '{token}',
        }),
      }
    }
    this.timer = setInterval(() => this.tick(), TICK_MS)
    this.timer.unref()
  }

  /** The ledger listener: one push; everything else happens on the next tick. */
  readonly observe = (call: CallRecord): void => {
    this.incoming.push(call)
  }

  /**
   * Recorded calls' costs and tokens that moved (re-pricing, a background response's real usage):
   * a rise is added to the cost (`burnrate.tokens`) counter, a fall to the reductions counter, with
   * the attributes the call was counted with. The token histogram keeps each call as recorded.
   */
  readonly moved = (moves: readonly MovedCost[]): void => {
    const ins = this.instruments
    if (!ins) return
    for (const m of moves) {
      try {
        const base = this.callAttributes(m.endpoint, m.provider, m.model)
        const attributes = this.costAttributes(base, m.agent, m.tenant, m.billing)
        if (m.delta > 0) ins.cost.add(m.delta, attributes)
        else if (m.delta < 0) ins.costReductions.add(-m.delta, attributes)
        const t = m.tokens
        if (t) {
          TOKEN_TYPES.forEach((type, i) => {
            const d = t[TOKEN_FIELDS[i]] ?? 0
            if (d > 0) ins.allTokens.add(d, { ...base, [BURNRATE.tokenType]: type })
            else if (d < 0) ins.tokenReductions.add(-d, { ...base, [BURNRATE.tokenType]: type })
          })
        }
      } catch {
        // a value the SDK refuses is that move's loss only
      }
    }
  }

  /** Metric points for the calls that came in, and spans for as many as the backlog takes; then a span export if none is under way. */
  tick(): void {
    const calls = this.incoming
    this.incoming = []
    // Token counts are summed per attribute set and added once per tick (the SDK hashes the
    // attributes of every measurement); histograms and cost take each call as it is.
    const tokenSums = new Map<string, { attributes: Attributes; sums: number[] }>()
    for (const c of calls) {
      try {
        this.record(c, tokenSums)
      } catch {
        // one call the SDK refuses costs its own points only
      }
    }
    for (const { attributes, sums } of tokenSums.values()) {
      TOKEN_TYPES.forEach((type, i) => {
        if (sums[i] > 0) this.instruments?.allTokens.add(sums[i], { ...attributes, [BURNRATE.tokenType]: type })
      })
    }
    if (this.tracerProvider) {
      const room = this.opts.maxQueue - this.backlog.length
      if (calls.length > room) {
        this.status.dropped_spans += calls.length - Math.max(0, room)
        if (room > 0) this.backlog.push(...calls.slice(0, room))
      } else if (calls.length > 0) this.backlog.push(...calls)
      this.status.queued = this.backlog.length
      if (!this.exporting && this.backlog.length > 0) this.exportSpans()
    }
  }

  /** A call's (bounded) operation, provider and (bounded) model: every instrument's attributes. */
  private callAttributes(endpoint: string, provider: string, model: string): Attributes {
    return { [GEN_AI.operation]: this.operation.value(operationName(endpoint)), [GEN_AI.provider]: providerName(provider), [GEN_AI.requestModel]: this.model.value(model) }
  }

  /** What a call's cost is counted under (and every later move of it): with its agent, tenant and billing (plan value is not spend). */
  private costAttributes(base: Attributes, agent: string, tenant: string, billing: CallBilling | undefined): Attributes {
    return { ...base, [GEN_AI.agent]: this.agent.value(agent), [BURNRATE.tenant]: this.tenant.value(tenant), [BURNRATE.billing]: billingLabel(billing) }
  }

  private record(c: CallRecord, tokenSums: Map<string, { attributes: Attributes; sums: number[] }>): void {
    const ins = this.instruments
    if (!ins) return
    const base = this.callAttributes(c.endpoint, c.provider, c.model)
    // Only a call whose tokens are known: one refused (a budget, the provider's 429) or failed
    // before any usage is recorded with no token counted, and 0-token points skewed every average
    // and percentile of the histogram. Its duration and cost points stay.
    if (c.input_tokens > 0 || c.output_tokens > 0) {
      ins.tokens.record(c.input_tokens, { ...base, [GEN_AI.tokenType]: 'input' })
      ins.tokens.record(c.output_tokens, { ...base, [GEN_AI.tokenType]: 'output' })
    }
    const err = errorType(c)
    ins.duration.record(c.latency_ms / 1000, err ? { ...base, [ERROR_TYPE]: this.errorType.value(err) } : base)
    ins.cost.add(c.cost_usd, this.costAttributes(base, c.agent, c.tenant, c.billing))
    const key = `${base[GEN_AI.operation]}\n${base[GEN_AI.provider]}\n${base[GEN_AI.requestModel]}`
    let t = tokenSums.get(key)
    if (!t) {
      t = { attributes: base, sums: [0, 0, 0, 0, 0] }
      tokenSums.set(key, t)
    }
    t.sums[0] += c.input_tokens
    t.sums[1] += c.output_tokens
    t.sums[2] += c.cache_read_tokens
    t.sums[3] += c.cache_write_tokens
    t.sums[4] += c.reasoning_tokens
  }

  /** One batch of the backlog as spans, to the collector; the next goes when this one is done. */
  private exportSpans(): void {
    const exporter = this.traceExporter
    const provider = this.tracerProvider
    if (!exporter || !provider) return
    const calls = this.backlog.splice(0, BATCH)
    this.status.queued = this.backlog.length
    const tracer = provider.getTracer('burnrate', this.opts.version)
    for (const c of calls) {
      const span = tracer.startSpan(spanName(c), { kind: SpanKind.CLIENT, startTime: c.ts, attributes: spanAttributes(c) })
      if (errorType(c)) span.setStatus({ code: SpanStatusCode.ERROR })
      span.end(c.ts + c.latency_ms)
    }
    const spans = this.collect.spans
    this.collect.spans = []
    this.exporting = true
    let done = false
    const finish = (ok: boolean, error?: unknown): void => {
      if (done) return
      done = true
      clearTimeout(guard)
      this.exporting = false
      if (ok) this.status.exported_spans += spans.length
      else {
        this.status.dropped_spans += spans.length
        this.status.last_error = `span export to ${this.status.endpoint} failed: ${describe(error)}`
      }
    }
    // The exporter's own timeout is a limit on silence, not on the export: a collector (or a proxy in
    // front of it) that answers a byte at a time holds it for as long as it likes. Past the longest an
    // export may take (behind a proxy, opening the tunnel too), it is given up and its connection
    // closed: else the next export went beside it, one more connection held open each time, without end.
    const limit = this.opts.timeoutMs * (this.opts.spanAgent ? 2 : 1) + 5000
    const guard = setTimeout(() => {
      finish(false, new Error(`no answer within ${Math.round(limit / 1000)} s`))
      void this.spanAgent?.then((a) => a.destroy(), () => {})
    }, limit)
    guard.unref()
    try {
      exporter.export(spans, (r) => finish(r.code === 0, r.error))
    } catch (err) {
      finish(false, err)
    }
  }

  /**
   * The metric exporter, its exports counted in the health status. The SDK's periodic reader stops
   * waiting for an export after its timeout but does not stop the export, and the exporter's own
   * timeout is a limit on silence: a collector (or a proxy in front of it) that answers a byte at a
   * time held each export's connection open while the next interval's went beside it, one more
   * connection every interval, without end. So an export still going after `limitMs`, or when the
   * next one comes, is given up here: failed, and its connection closed.
   */
  private countedMetricExporter(inner: OTLPMetricExporter, limitMs: number): PushMetricExporter {
    return {
      export: (metrics, done) => {
        // The one before, if still going: its connection is the only one the agent holds.
        this.metricExport?.giveUp('the next export was due')
        let over = false
        const finish = (r: { code: number; error?: Error }): void => {
          if (over) return
          over = true
          clearTimeout(guard)
          if (this.metricExport === current) this.metricExport = null
          if (r.code === 0) this.status.metric_exports++
          else {
            this.status.failed_metric_exports++
            this.status.last_error = `metric export to ${this.status.endpoint} failed: ${describe(r.error)}`
          }
          done(r)
        }
        const current = {
          giveUp: (why = `no answer within ${limitMs} ms`): void => {
            if (over) return
            finish({ code: 1, error: new Error(why) })
            this.metricAgent?.destroy()
          },
        }
        this.metricExport = current
        const guard = setTimeout(() => current.giveUp(), limitMs)
        guard.unref()
        try {
          inner.export(metrics, finish)
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
    while ((this.exporting || this.backlog.length > 0) && Date.now() < deadline) {
      if (!this.exporting) this.exportSpans()
      await new Promise((r) => setTimeout(r, 20))
    }
    const stop = Promise.allSettled([this.meterProvider?.shutdown(), this.tracerProvider?.shutdown(), this.traceExporter?.shutdown()])
    await Promise.race([stop, new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now())).unref())])
  }
}

/** A keep-alive agent for `endpoint`'s protocol, as the exporters make their own. */
function directAgent(endpoint: string): Promise<Agent> {
  return (new URL(endpoint).protocol === 'https:' ? import('node:https') : import('node:http')).then((m) => new m.Agent({ keepAlive: true }))
}
