import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, postJson } from '../support/http'
import type { MockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { ledgerRows, startCollector, startFixtureUpstream } from './support'

/**
 * A span's `gen_ai.usage.cost` is a double (README: OpenTelemetry export), whatever its value. The
 * OTLP JSON encoder writes a whole number as `intValue`, so a call that cost $0 (refused, failed,
 * a model of no known price) or a whole number of dollars went out as an int and every other call
 * as a double: a backend that types an attribute by the first value it stores (Elasticsearch's
 * dynamic mapping takes `long`, then truncates every later cost to whole dollars) or keeps ints and
 * doubles apart (a sum or a filter over one type) lost the cost of the others.
 */

let upstream: MockUpstream
let collector: Awaited<ReturnType<typeof startCollector>>
let t: TestServer

beforeAll(async () => {
  upstream = await startFixtureUpstream()
  collector = await startCollector()
  t = await startTestServer({ timezone: 'UTC', otel: { endpoint: collector.url, interval_ms: 200, metrics: false } }, upstream.url)
})
afterAll(async () => {
  await t?.cleanup()
  await collector?.close()
  await upstream?.close()
})

type AnyValue = { stringValue?: string; intValue?: unknown; doubleValue?: number }

describe("a span's gen_ai.usage.cost", () => {
  it('is a double for a call at $0 as for one that cost money', async () => {
    const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }
    const headers = { authorization: 'Bearer sk-otel-cost-double-0001' }
    // A priced call, then a provider's 429 (no usage: $0).
    expect((await postJson(`${t.url}/v1/chat/completions`, chat, { ...headers, 'x-fixture': 'openai-chat/chat-nonstream-cached.json' })).status).toBe(200)
    expect((await postJson(`${t.url}/v1/chat/completions`, chat, { ...headers, 'x-fixture': 'errors/openai-429-rate-limit-tpm.json', 'x-status': '429' })).status).toBe(429)
    t.server.ledger.flush()
    const rows = ledgerRows(t.dbFile)
    expect(rows.map((r) => r.cost_usd > 0)).toEqual([true, false])
    const costs = (await eventually(() => {
      const spans = collector.traces.flatMap((b: any) => b.resourceSpans.flatMap((r: any) => r.scopeSpans.flatMap((s: any) => s.spans)))
      return spans.length >= 2 ? spans.map((s: any) => s.attributes.find((a: any) => a.key === 'gen_ai.usage.cost').value as AnyValue) : null
    }, 15_000)) as AnyValue[]
    expect(costs).toEqual([{ doubleValue: rows[0].cost_usd }, { doubleValue: 0 }])
  })
})
