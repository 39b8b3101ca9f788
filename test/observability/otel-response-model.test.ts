import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { startCollector } from './support'

/**
 * A span's `gen_ai.response.model` is set only on success (README: OpenTelemetry export). An
 * Anthropic stream that ends in an `error` event (`overloaded_error`) after its `message_start` is
 * a 200 with an error recorded: its span has status ERROR and `error.type`, and had the response
 * model too, as if the model had answered.
 */

const MODEL = 'claude-sonnet-4-5-20250929'
const sse = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
const usage = { input_tokens: 1_200, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 }
const start = sse('message_start', { message: { id: 'msg_otel_model', type: 'message', role: 'assistant', model: MODEL, content: [], usage } })
const CUT = start + sse('error', { error: { type: 'overloaded_error', message: 'Overloaded' } })
const WHOLE =
  start +
  sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
  sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hello.' } }) +
  sse('content_block_stop', { index: 0 }) +
  sse('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 3 } }) +
  sse('message_stop', {})

let upstream: MockUpstream
let collector: Awaited<ReturnType<typeof startCollector>>
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream((req) => ({
    status: 200,
    headers: { 'content-type': 'text/event-stream' },
    body: JSON.parse(req.body.toString('utf8')).messages[0].content === 'cut' ? CUT : WHOLE,
  }))
  collector = await startCollector()
  t = await startTestServer({ timezone: 'UTC', otel: { endpoint: collector.url, interval_ms: 200, metrics: false } }, upstream.url)
})
afterAll(async () => {
  await t?.cleanup()
  await collector?.close()
  await upstream?.close()
})

const attr = (s: any, key: string) => s.attributes.find((a: any) => a.key === key)?.value.stringValue as string | undefined

describe('gen_ai.response.model on a span', () => {
  it('is set on success only: not on a 200 whose stream ended in an error', async () => {
    for (const content of ['cut', 'whole']) {
      const r = await postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', stream: true, max_tokens: 100, messages: [{ role: 'user', content }] }, { 'x-api-key': 'sk-ant-otel-model-0001' })
      expect(r.status).toBe(200)
    }
    const spans = (await eventually(() => {
      const all = collector.traces.flatMap((b: any) => b.resourceSpans.flatMap((r: any) => r.scopeSpans.flatMap((s: any) => s.spans)))
      return all.length >= 2 ? all : null
    }, 15_000)) as any[]
    const cut = spans.find((s) => attr(s, 'error.type') === 'overloaded_error')
    const whole = spans.find((s) => attr(s, 'error.type') === undefined)
    expect(cut.status.code).toBe(2)
    expect(attr(cut, 'gen_ai.request.model')).toBe(MODEL)
    expect(attr(cut, 'gen_ai.response.model')).toBeUndefined()
    expect(attr(whole, 'gen_ai.response.model')).toBe(MODEL)
  }, 30_000)
})
