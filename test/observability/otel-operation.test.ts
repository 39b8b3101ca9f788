import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { ledgerRows, startCollector } from './support'

/**
 * `gen_ai.operation.name` on the OTLP metrics is bounded as model, agent and tenant are. It is the
 * ledger's endpoint, and a Gemini call's endpoint is the method its client names in the path
 * (`…/models/gemini-2.5-flash:<method>`, any letters, any length): every new method was a new
 * attribute set on every instrument, each holding the whole name (one of 10,000 letters, as long
 * as a request line may be), up to the SDK's 20,000 sets an instrument.
 */

let upstream: MockUpstream
let collector: Awaited<ReturnType<typeof startCollector>>
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 404, headers: { 'content-type': 'application/json' }, body: '{"error":{"code":404,"message":"not found","status":"NOT_FOUND"}}' }))
  collector = await startCollector()
  t = await startTestServer({ timezone: 'UTC', otel: { endpoint: collector.url, interval_ms: 200, traces: false } }, upstream.url)
})
afterAll(async () => {
  await t?.cleanup()
  await collector?.close()
  await upstream?.close()
})

/** Letters only (a Gemini method): `n` as a base-26 word. */
const word = (n: number) => n.toString(26).replace(/./g, (d) => String.fromCharCode(97 + parseInt(d, 26)))

describe('gen_ai.operation.name on the OTLP metrics', () => {
  it('keeps its first 50 values (cut at 100 characters), then other', async () => {
    const methods = [...Array.from({ length: 70 }, (_, i) => `method${word(i)}`), 'x'.repeat(10_000)]
    for (const m of methods) {
      const r = await postJson(`${t.url}/v1beta/models/gemini-2.5-flash:${m}`, { contents: [] }, { 'x-goog-api-key': 'AIza-otel-operation-0001' })
      expect(r.status).toBe(404)
    }
    t.server.ledger.flush()
    expect(ledgerRows(t.dbFile)).toHaveLength(methods.length)
    const operations = (await eventually(() => {
      const body = collector.metrics.at(-1)
      const points = (body?.resourceMetrics ?? [])
        .flatMap((r: any) => r.scopeMetrics.flatMap((s: any) => s.metrics))
        .filter((m: any) => m.name === 'gen_ai.client.operation.duration')
        .flatMap((m: any) => m.histogram.dataPoints)
      const count = points.reduce((n: number, p: any) => n + Number(p.count), 0)
      if (count < methods.length) return null
      return new Set(points.map((p: any) => p.attributes.find((a: any) => a.key === 'gen_ai.operation.name').value.stringValue as string))
    }, 15_000)) as Set<string>
    expect(operations.size).toBe(51)
    expect(operations.has('other')).toBe(true)
    expect(Math.max(...[...operations].map((o) => o.length))).toBeLessThanOrEqual(100)
  })
})
