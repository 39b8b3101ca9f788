import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OtelPipeline } from '../../src/main/otel/pipeline'
import { makeCall } from '../dashboard/seed'
import { otlpSum } from './support'

/**
 * A stop's close drained the spans first and only then gave the metrics their last export, with
 * what was left of the wait: a span export that took it all (a collector slow to take spans, a
 * backlog of spans left by an outage, 512 a request) left none, and the process exited before the
 * metric points since the last interval (60 s by default) were sent: the collector's cost stayed
 * below the ledger's for good.
 */

let server: http.Server
let url: string
const metrics: any[] = []
/** Span exports held without an answer (a collector slow to take spans). */
const held: http.ServerResponse[] = []
beforeAll(async () => {
  server = http.createServer(async (req, res) => {
    const parts: Buffer[] = []
    for await (const c of req) parts.push(c as Buffer)
    if (req.url === '/v1/traces') {
      held.push(res)
      return
    }
    metrics.push(JSON.parse(Buffer.concat(parts).toString('utf8')))
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  for (const res of held) res.destroy()
  server.closeAllConnections()
  await new Promise<void>((r) => server.close(() => r()))
})

describe("a stop's close while the span export takes the whole wait", () => {
  it('still sends the metric points since the last interval before it returns', async () => {
    const p = new OtelPipeline({ endpoint: url, headers: {}, intervalMs: 60_000, timeoutMs: 5000, maxQueue: 100, traces: true, metrics: true, version: 'test' })
    p.observe(makeCall({ model: 'gpt-4o-mini', cost_usd: 0.25 }))
    // A stop's close: its wait (2 s) taken whole by the span export, which is never answered.
    await p.close()
    // The exit comes now: the cost must have reached the collector.
    expect(held.length).toBeGreaterThan(0)
    expect(otlpSum(metrics, 'gen_ai.usage.cost', { 'gen_ai.request.model': 'gpt-4o-mini' })).toBe(0.25)
  })
})
