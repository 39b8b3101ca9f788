import { onCostMoved } from '../pricing/moves'
import type { Feature } from '../server/context'

/**
 * Optional OTLP/HTTP export of metrics and one span per call (when `otel.endpoint` is set),
 * fed from the ledger like the Prometheus counters. Its state is `otel` in `/api/health`
 * (null when off). The OpenTelemetry SDK (./pipeline.ts) is loaded only when export is on,
 * before the server listens.
 */
/** How long an exit that cannot wait (a second signal) waits for the last export. */
const EXIT_WAIT_MS = 1000

export const otel: Feature = async (ctx) => {
  const o = ctx.config.otel
  if (!o.endpoint || (!o.traces && !o.metrics)) {
    ctx.healthSections.otel = () => null
    return
  }
  const { OtelPipeline } = await import('./pipeline')
  const pipeline = new OtelPipeline({
    endpoint: o.endpoint,
    headers: o.headers,
    intervalMs: o.interval_ms,
    timeoutMs: o.timeout_ms,
    maxQueue: o.max_queue,
    traces: o.traces,
    metrics: o.metrics,
    version: ctx.version,
    // The metrics' own: an export given up closes its connection (a proxy that never answers
    // CONNECT: the tunnel is closed with the export it was for).
    agent: ctx.egress.nodeAgent(o.endpoint, o.timeout_ms),
    // The spans' own (of the same kind): an export given up closes its connection, not a metric export's.
    spanAgent: ctx.egress.nodeAgent(o.endpoint, o.timeout_ms),
    // An agent is made for a private CA alone too (upstream.ca_file): only a proxy's may take twice the timeout.
    proxied: ctx.egress.proxied(o.endpoint),
    warn: (message) => ctx.log.warn(message),
  })
  const stopCalls = ctx.ledger.onCall(pipeline.observe)
  const stopMoves = onCostMoved(ctx.ledger, pipeline.moved)
  const stop = () => {
    stopCalls()
    stopMoves()
  }
  ctx.healthSections.otel = () => ({ ...pipeline.status })
  ctx.onClose(async () => {
    stop()
    await pipeline.close()
  })
  // A second signal: the calls it cut and recorded go out before the exit, waiting at most 1 s.
  ctx.onExit(async () => {
    stop()
    await pipeline.close(EXIT_WAIT_MS)
  })
}
