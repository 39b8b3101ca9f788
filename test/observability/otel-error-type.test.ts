import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { ledgerRows, startCollector } from './support'

/**
 * `error.type` on the OTLP duration histogram is bounded as model, agent, tenant and operation are.
 * It is the ledger's `error`: Burnrate's reason, or the error the provider's answer named, which for
 * some APIs is the error's words (Mistral's Conversations stream ends in `conversation.response.error`
 * with a `message`, Gemini's Interactions stream in an `error` event with one), and words carry
 * the request's figures ("Prompt contains 40312 tokens…"): every call that failed so was a new
 * attribute set of `gen_ai.client.operation.duration`, up to the SDK's 20,000, past which every new
 * set (a new model's, a new provider's) lost its attributes to one `otel.metric.overflow` point.
 */

let upstream: MockUpstream
let collector: Awaited<ReturnType<typeof startCollector>>
let t: TestServer

const MODEL = 'mistral-medium-latest'
const message = (n: number) => `Prompt contains ${40_000 + n} tokens, too large for model with 32768 maximum context length`

beforeAll(async () => {
  let n = 0
  upstream = await startMockUpstream(() => {
    const i = n++
    const events = [
      { type: 'conversation.response.started', created_at: '2026-12-07T03:00:00Z', conversation_id: `conv_${i}` },
      { type: 'conversation.response.error', created_at: '2026-12-07T03:00:01Z', message: message(i), code: 3051 },
    ]
    const body = events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('')
    return { status: 200, headers: { 'content-type': 'text/event-stream' }, body }
  })
  collector = await startCollector()
  t = await startTestServer({ timezone: 'UTC', otel: { endpoint: collector.url, interval_ms: 200 } }, upstream.url)
})
afterAll(async () => {
  await t?.cleanup()
  await collector?.close()
  await upstream?.close()
})

const attr = (p: any, key: string) => p.attributes.find((a: any) => a.key === key)?.value.stringValue as string | undefined

describe('error.type on the OTLP metrics', () => {
  it('keeps its first 50 values, then other; the ledger and the spans keep each call its own', async () => {
    const calls = 70
    for (let i = 0; i < calls; i++) {
      const r = await postJson(`${t.url}/mistral/v1/conversations`, { model: MODEL, inputs: 'hi', stream: true }, { authorization: 'Bearer mistral-otel-error-0001' })
      expect(r.status).toBe(200)
    }
    t.server.ledger.flush()
    const rows = ledgerRows(t.dbFile)
    expect(rows).toHaveLength(calls)
    // The ledger keeps what the provider said, cut at 100 characters.
    expect(new Set(rows.map((r) => r.error)).size).toBe(calls)
    expect(rows[0].error).toBe(message(0).slice(0, 100))
    const points = (await eventually(() => {
      const body = collector.metrics.at(-1)
      const ps = (body?.resourceMetrics ?? [])
        .flatMap((r: any) => r.scopeMetrics.flatMap((s: any) => s.metrics))
        .filter((m: any) => m.name === 'gen_ai.client.operation.duration')
        .flatMap((m: any) => m.histogram.dataPoints)
      return ps.reduce((n: number, p: any) => n + Number(p.count), 0) >= calls ? ps : null
    }, 15_000)) as any[]
    const errors = new Set(points.map((p) => attr(p, 'error.type')))
    expect(errors.size).toBe(51)
    expect(errors.has('other')).toBe(true)
    // Every call is in a point of its model and provider (none lost to the SDK's overflow point).
    expect(points.every((p) => attr(p, 'gen_ai.request.model') === MODEL && attr(p, 'gen_ai.provider.name') === 'mistral_ai')).toBe(true)
    // A span is the call's own: its error as the ledger has it.
    const spans = (await eventually(() => {
      const all = collector.traces.flatMap((b: any) => b.resourceSpans.flatMap((r: any) => r.scopeSpans.flatMap((s: any) => s.spans)))
      return all.length >= calls ? all : null
    }, 15_000)) as any[]
    expect(new Set(spans.map((s: any) => attr(s, 'error.type'))).size).toBe(calls)
  })
})
