import zlib from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A model's real answer that a gateway or local server (cortex.cpp) labels `text/html`: it is
 * still the model's answer, priced from the usage it carries exactly as the same bytes labelled
 * JSON (or SSE) are, not recorded at $0 as a web page would be.
 */

const JSON_BODY = fixture('openai-chat/chat-nonstream-cached.json')
const SSE_BODY = fixture('openai-chat/chat-stream-with-usage.sse')
const HTML = 'text/html; charset=utf-8'
const ask = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Summarise the news.' }] }
const askStream = { ...ask, stream: true, stream_options: { include_usage: true } }

let up: MockUpstream
let t: TestServer
let ctype = 'application/json'
let body = JSON_BODY

beforeAll(async () => {
  up = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': ctype }, body }))
  t = await startTestServer({}, up.url)
})
afterAll(async () => {
  await t.cleanup()
  await up.close()
})

/** Sends one call answered with `answer` under `type`, and returns its ledger row. */
async function call(req: unknown, answer: Buffer, type: string, encoding?: 'gzip'): Promise<any> {
  ctype = type
  body = answer
  up.setResponder(() => ({ status: 200, headers: { 'content-type': ctype }, body, encoding }))
  const before = ledgerRows(t.dbFile).length
  const res = await postJson(`${t.url}/v1/chat/completions`, req)
  expect(res.status).toBe(200)
  // Passed on as it came (compressed, when it was).
  expect((encoding ? zlib.gunzipSync(res.body) : res.body).equals(answer)).toBe(true)
  return eventually(() => ledgerRows(t.dbFile)[before])
}

const MONEY = ['input_tokens', 'output_tokens', 'cache_read_tokens', 'cost_usd', 'estimated', 'error', 'model'] as const
function money(row: any): Record<string, unknown> {
  return Object.fromEntries(MONEY.map((k) => [k, row[k]]))
}

describe('a model answer labelled text/html', () => {
  it('is priced from its JSON body usage as the same body labelled JSON is', async () => {
    const asJson = await call(ask, JSON_BODY, 'application/json')
    expect(asJson).toMatchObject({ input_tokens: 1149, output_tokens: 353, cache_read_tokens: 1024, estimated: 0, error: null })
    expect(asJson.cost_usd).toBeGreaterThan(0)
    const asHtml = await call(ask, JSON_BODY, HTML)
    expect(money(asHtml)).toEqual(money(asJson))
  })

  it('is priced from its SSE stream usage as the same stream labelled text/event-stream is', async () => {
    const asSse = await call(askStream, SSE_BODY, 'text/event-stream')
    expect(asSse).toMatchObject({ input_tokens: 78, output_tokens: 9, estimated: 0, error: null, streamed: 1 })
    expect(asSse.cost_usd).toBeGreaterThan(0)
    const asHtml = await call(askStream, SSE_BODY, HTML)
    expect(money(asHtml)).toEqual(money(asSse))
    expect(asHtml.streamed).toBe(1)
  })

  it('is read through its compression, as any answer is', async () => {
    const asJson = await call(ask, JSON_BODY, 'application/json')
    const asHtml = await call(ask, JSON_BODY, HTML, 'gzip')
    expect(money(asHtml)).toEqual(money(asJson))
  })
})

describe('a web page labelled text/html', () => {
  it('is no model answer whatever its first byte: $0, not estimated, not streamed', async () => {
    const pages = ['<!doctype html><p>Blocked by policy</p>', '\r\n  <html><body>Sign in</body></html>', 'Access denied by your network administrator.', '{ "not": "a model answer" }']
    for (const page of pages) {
      for (const req of [ask, askStream]) {
        const row = await call(req, Buffer.from(page), HTML)
        expect(row).toMatchObject({ status: 200, cost_usd: 0, input_tokens: 0, output_tokens: 0, estimated: 0, streamed: 0, error: 'not_a_model_answer: text/html' })
      }
    }
  })
})
