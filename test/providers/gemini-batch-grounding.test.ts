import { calcPrice } from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { rows } from './ledger'

// Gemini batch results too large to hold whole (an answer over 64 MB, a results line over 16 MB)
// are read by picking a few values as the bytes pass: the grounded answers among them keep their
// Google Search queries, as a smaller batch's do, so `pricing.google_search_grounding: paid`
// charges their grounded prompts (Gemini 2.5: $35 per 1,000) at list on top of the half-price tokens.

const MB = 1024 * 1024
const NAME = 'batches/grounded-huge'
const END_TIME = new Date(Math.max(Date.now() - 60_000, new Date().setUTCHours(0, 0, 0, 0))).toISOString()

/** A grounded answer with `chars` of text, its two queries and Search suggestions, and this usage. */
const answer = (chars: number, id: string, prompt: number, out: number) => ({
  candidates: [
    {
      content: { role: 'model', parts: [{ text: 'x'.repeat(chars) }] },
      finishReason: 'STOP',
      index: 0,
      groundingMetadata: {
        webSearchQueries: ['current time in San Francisco', 'weather in San Francisco right now'],
        searchEntryPoint: { renderedContent: '<div class="container"></div>' },
        groundingChunks: [{ web: { uri: 'https://www.google.com/search?q=weather', title: 'Weather' } }],
      },
    },
  ],
  usageMetadata: { promptTokenCount: prompt, candidatesTokenCount: out, totalTokenCount: prompt + out },
  modelVersion: 'gemini-2.5-flash',
  responseId: id,
})

const half = (u: Record<string, number>) => calcPrice(u as any, 'gemini-2.5-flash', { providerId: 'google', timestamp: new Date() })!.total_price / 2

let upstream: MockUpstream
let t: TestServer
let operation: string
let fileText: Buffer

beforeAll(async () => {
  operation = JSON.stringify({
    name: NAME,
    metadata: { model: 'models/gemini-2.5-flash', state: 'BATCH_STATE_SUCCEEDED', endTime: END_TIME },
    done: true,
    response: {
      inlinedResponses: {
        inlinedResponses: [
          { response: answer(33 * MB, 'grounded-r0', 1000, 200), metadata: { key: 'a' } },
          { response: answer(33 * MB, 'grounded-r1', 2000, 300), metadata: { key: 'b' } },
        ],
      },
    },
  })
  expect(operation.length).toBeGreaterThan(64 * MB)
  fileText = Buffer.from(JSON.stringify({ key: 'long', response: answer(17 * MB, 'grounded-file', 500, 50) }) + '\n')
  upstream = await startMockUpstream((req) =>
    req.url.includes(':download')
      ? { headers: { 'content-type': 'application/octet-stream' }, body: fileText }
      : { headers: { 'content-type': 'application/json; charset=UTF-8' }, body: operation },
  )
  t = await startTestServer({ timezone: 'UTC', pricing: { google_search_grounding: 'paid' } }, upstream.url)
})
afterAll(async () => {
  await t?.cleanup()
  await upstream?.close()
})

const get = (path: string) => request(`${t.url}/gemini${path}`, { headers: { 'x-goog-api-key': 'AIza-gemini-grounded-batch-aaaa' } })
const batchRows = () => rows(t).filter((r) => r.endpoint === 'batch.generateContent')

describe('Gemini batch results too large to hold, grounded with Google Search', () => {
  it('a batch answer over 64 MB keeps each result\'s queries, and paid charges its grounded prompt', async () => {
    expect((await get(`/v1beta/${NAME}`)).status).toBe(200)
    const got = (await eventually(() => (batchRows().length === 2 ? batchRows() : undefined)))!
    expect(got.map((c) => [c.response_id, c.input_tokens, c.output_tokens])).toEqual([
      ['grounded-r0', 1000, 200],
      ['grounded-r1', 2000, 300],
    ])
    for (const c of got) expect(JSON.parse(c.usage_extra)).toEqual({ batch: true, google_search_queries: 2, google_search_grounded: true })
    expect(got[0].cost_usd).toBe(half({ input_tokens: 1000, output_tokens: 200 }) + 35 / 1000)
    expect(got[1].cost_usd).toBe(half({ input_tokens: 2000, output_tokens: 300 }) + 35 / 1000)
  })

  it('a results file line over 16 MB keeps them too', async () => {
    expect((await get('/v1beta/files/grounded-out:download?alt=media')).status).toBe(200)
    const row = (await eventually(() => batchRows().find((c) => c.response_id === 'grounded-file')))!
    expect(JSON.parse(row.usage_extra)).toEqual({ batch: true, google_search_queries: 2, google_search_grounded: true })
    expect(row.cost_usd).toBe(half({ input_tokens: 500, output_tokens: 50 }) + 35 / 1000)
  })
})
