import { calcPrice } from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/main/log'
import { eventually, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { RAN, chat, line } from './batch-support'
import { rows } from './ledger'

// A batch's results too large to hold whole were dropped: an OpenAI output line over 16 MB (an
// embeddings request of about a thousand inputs: 1,536 numbers each) and a Gemini batch answer
// over 64 MB (thousands of inline results) recorded nothing of what they had cost. Their usage is
// now picked as the bytes pass, with memory bounded whatever their size.

/** An embeddings answer of `n` vectors of 1,536 dimensions, as JSON text (about 31 KB a vector). */
function embeddingsBody(n: number, promptTokens: number): string {
  const vector = `[${Array.from({ length: 1536 }, (_, i) => (((i * 7919) % 2000) / 100000 - 0.01).toFixed(18)).join(',')}]`
  const data = Array.from({ length: n }, (_, i) => `{"object":"embedding","index":${i},"embedding":${vector}}`).join(',')
  return `{"object":"list","data":[${data}],"model":"text-embedding-3-small","usage":{"prompt_tokens":${promptTokens},"total_tokens":${promptTokens}}}`
}

/** Half the list price (the Batch API's rate), as the price library computes it. */
const half = (model: string, provider: string, u: Record<string, number>) => calcPrice(u as any, model, { providerId: provider, timestamp: new Date() })!.total_price / 2

describe('OpenAI: a batch output line too long to hold (a thousand embeddings)', () => {
  let upstream: MockUpstream
  let t: TestServer
  let file: Buffer

  beforeAll(async () => {
    const big = embeddingsBody(900, 36_000)
    const embeddingsLine = `{"id":"batch_req_big002","custom_id":"emb-2","response":{"status_code":200,"request_id":"req_big","body":${big}},"error":null}`
    file = Buffer.from([line('batch_req_big001', 'chat-1', chat), embeddingsLine, line('batch_req_big003', 'chat-3', { ...chat, id: 'chatcmpl-3' })].join('\r\n') + '\r\n')
    expect(embeddingsLine.length).toBeGreaterThan(16 * 1024 * 1024)
    upstream = await startMockUpstream(() => ({ headers: { 'content-type': 'application/octet-stream' }, body: file }))
    t = await startTestServer({ timezone: 'UTC' }, upstream.url)
  })
  afterAll(async () => {
    await t?.cleanup()
    await upstream?.close()
  })

  it('is recorded with its tokens and exact batch price, between the lines around it', async () => {
    const r = await request(`${t.url}/v1/files/file-bigout/content`, { headers: { authorization: 'Bearer sk-test-big-batch-aaaaaaaa' } })
    expect(r.status).toBe(200)
    expect(r.body.length).toBe(file.length)
    const batchRows = () => rows(t).filter((c) => c.endpoint.startsWith('batch.'))
    const got = (await eventually(() => (batchRows().length === 3 ? batchRows() : undefined)))!
    expect(got.map((c) => c.endpoint)).toEqual(['batch.chat.completions', 'batch.embeddings', 'batch.chat.completions'])
    const emb = got[1]
    expect(emb).toMatchObject({ model: 'text-embedding-3-small', input_tokens: 36_000, output_tokens: 0, priced: 1, status: 200 })
    expect(emb.cost_usd).toBe(half('text-embedding-3-small', 'openai', { input_tokens: 36_000 }))
    expect(got[0].ts).toBe(RAN * 1000)
    expect(got[2].cost_usd).toBe(got[0].cost_usd)
  })
})

describe('a results line that cannot be read, however long', () => {
  it('is said in the log, and the lines after it are recorded', async () => {
    const broken = `{"id":"batch_req_bad001","custom_id":"bad-1","response":{"status_code":200,"body":{"object":"list","data":"${'x'.repeat(17 * 1024 * 1024)}`
    const file = Buffer.from([broken, line('batch_req_ok002', 'ok-2', chat)].join('\n') + '\n')
    const upstream = await startMockUpstream(() => ({ headers: { 'content-type': 'application/octet-stream' }, body: file }))
    const lines: string[] = []
    const t = await startTestServer({ timezone: 'UTC' }, upstream.url, undefined, { log: createLogger('info', (l) => lines.push(l)) })
    try {
      expect((await request(`${t.url}/v1/files/file-broken/content`, { headers: { authorization: 'Bearer sk-test-broken-batch-aaaa' } })).status).toBe(200)
      await eventually(() => rows(t).some((c) => c.endpoint === 'batch.chat.completions'))
      expect(rows(t).filter((c) => c.endpoint.startsWith('batch.'))).toHaveLength(1)
      await eventually(() => lines.some((l) => l.includes('openai files.content: 1 line(s) of the answer could not be read')))
    } finally {
      await t.cleanup()
      await upstream.close()
    }
  })
})

describe('Gemini: batch results too large to hold', () => {
  const NAME = 'batches/huge789'
  const END_TIME = new Date(Math.max(Date.now() - 60_000, new Date().setUTCHours(0, 0, 0, 0))).toISOString()
  /** An answer with `chars` of text and this usage. */
  const answer = (chars: number, id: string, prompt: number, out: number) => ({
    candidates: [{ content: { role: 'model', parts: [{ text: 'x'.repeat(chars) }] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: prompt, candidatesTokenCount: out, totalTokenCount: prompt + out },
    modelVersion: 'gemini-2.5-flash',
    responseId: id,
  })
  const MB = 1024 * 1024
  let upstream: MockUpstream
  let t: TestServer
  let operation: string
  let fileText: Buffer

  beforeAll(async () => {
    operation = JSON.stringify({
      name: NAME,
      metadata: { '@type': 'type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch', model: 'models/gemini-2.5-flash', state: 'BATCH_STATE_SUCCEEDED', endTime: END_TIME },
      done: true,
      response: {
        '@type': 'type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatchOutput',
        inlinedResponses: {
          inlinedResponses: [
            { response: answer(30 * MB, 'huge-r0', 1000, 200), metadata: { key: 'a' } },
            { error: { code: 400, message: 'Request contains an invalid argument.' }, metadata: { key: 'b' } },
            { response: answer(36 * MB, 'huge-r2', 2000, 300), metadata: { key: 'c' } },
          ],
        },
      },
    })
    expect(operation.length).toBeGreaterThan(64 * MB)
    fileText = Buffer.from([{ key: 'long', response: answer(17 * MB, 'file-long', 500, 50) }, { key: 'short', response: answer(10, 'file-short', 5, 5) }].map((l) => JSON.stringify(l)).join('\n') + '\n')
    upstream = await startMockUpstream((req) =>
      req.url.includes(':download')
        ? { headers: { 'content-type': 'application/octet-stream' }, body: fileText }
        : { headers: { 'content-type': 'application/json; charset=UTF-8' }, body: operation },
    )
    t = await startTestServer({ timezone: 'UTC' }, upstream.url)
  })
  afterAll(async () => {
    await t?.cleanup()
    await upstream?.close()
  })
  const get = (path: string) => request(`${t.url}${path}`, { headers: { 'x-goog-api-key': 'AIza-gemini-huge-batch-aaaaaaa' } })
  const batchRows = () => rows(t).filter((r) => r.endpoint === 'batch.generateContent')

  it('a batch answer over 64 MB records each inline result, once, at half price', async () => {
    const r = await get(`/v1beta/${NAME}`)
    expect(r.status).toBe(200)
    expect(r.body.length).toBe(Buffer.byteLength(operation))
    const got = (await eventually(() => (batchRows().length === 2 ? batchRows() : undefined)))!
    expect(got.map((c) => [c.response_id, c.model, c.input_tokens, c.output_tokens, c.ts])).toEqual([
      ['huge-r0', 'gemini-2.5-flash', 1000, 200, Date.parse(END_TIME)],
      ['huge-r2', 'gemini-2.5-flash', 2000, 300, Date.parse(END_TIME)],
    ])
    expect(got[0].cost_usd).toBe(half('gemini-2.5-flash', 'google', { input_tokens: 1000, output_tokens: 200 }))
    expect(got[1].cost_usd).toBe(half('gemini-2.5-flash', 'google', { input_tokens: 2000, output_tokens: 300 }))
  })

  it('a results file line over 16 MB is recorded, and so is the line after it', async () => {
    expect((await get('/v1beta/files/huge-out:download?alt=media')).status).toBe(200)
    const fileRows = () => batchRows().filter((c) => c.response_id.startsWith('file-'))
    const got = (await eventually(() => (fileRows().length === 2 ? fileRows() : undefined)))!
    expect(got.map((c) => [c.response_id, c.input_tokens, c.output_tokens])).toEqual([
      ['file-long', 500, 50],
      ['file-short', 5, 5],
    ])
    expect(got[0].cost_usd).toBe(half('gemini-2.5-flash', 'google', { input_tokens: 500, output_tokens: 50 }))
  })
})
