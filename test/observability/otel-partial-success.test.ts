import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OtelPipeline } from '../../src/main/otel/pipeline'
import { makeCall } from '../dashboard/seed'

/**
 * A collector that takes an export in part answers it 200 with `partialSuccess` (OTLP/HTTP): the
 * spans or data points it refused, and why (a backend's attribute limits, a quota, points too old).
 * The SDK's exporters report such an answer as a success: the health counted every span of it
 * exported and the metric export done, and nothing said the collector had refused any.
 */

let server: http.Server
let url: string
beforeAll(async () => {
  server = http.createServer(async (req, res) => {
    for await (const _ of req);
    // OTLP's JSON writes an int64 as a string.
    const answer = req.url === '/v1/traces' ? { partialSuccess: { rejectedSpans: '2', errorMessage: 'span attribute limit' } } : { partialSuccess: { rejectedDataPoints: '3', errorMessage: 'points too old' } }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((r) => server.close(() => r()))
})

describe('an export the collector takes in part (OTLP partial success)', () => {
  it('counts the refused spans dropped, the metric export failed, and logs why', async () => {
    const warnings: string[] = []
    const p = new OtelPipeline({ endpoint: url, headers: {}, intervalMs: 60_000, timeoutMs: 5000, maxQueue: 100, traces: true, metrics: true, version: 'test', warn: (m) => warnings.push(m) })
    for (let i = 0; i < 3; i++) p.observe(makeCall({ model: 'gpt-4o-mini', cost_usd: 0.25 }))
    await p.close()
    expect(p.status).toMatchObject({ exported_spans: 1, dropped_spans: 2, metric_exports: 0 })
    // The flush and the shutdown's own export: cumulative, each sent the refused points again.
    expect(p.status.failed_metric_exports).toBeGreaterThan(0)
    expect(warnings.some((w) => /span export .* refused 2 of 3 spans: span attribute limit/.test(w))).toBe(true)
    expect(warnings.some((w) => /metric export .* refused 3 data points: points too old/.test(w))).toBe(true)
    expect(p.status.last_error).toMatch(/refused/)
  })
})
