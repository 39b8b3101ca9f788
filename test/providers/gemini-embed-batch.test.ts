import { calcPrice } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { eventually, request } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { notMarks, storedAfter } from './batch-support'
import { answer, rows } from './ledger'

// The Gemini Batch API's embedding batches (`models/{model}:asyncBatchEmbedContent`, at half the
// embedding price as Google prices its Batch API). Once done, `GET /v1beta/batches/{id}` carries
// their inline results under `inlinedEmbedContentResponses.inlinedResponses[]`, each
// `{response: {embedding: {values}, tokenCount}}` or `{error}`: the layout Google's own SDK reads
// (googleapis/js-genai src/converters/_batches_converters.ts: batchJobDestinationFromMldev,
// inlinedEmbedContentResponseFromMldev, singleEmbedContentResponseFromMldev). `tokenCount` is an
// int64, which Google's JSON gives as a string. The API may also send them under the generate
// batches' `inlinedResponses.inlinedResponses[]`, which the SDKs rename when a response holds an
// `embedding` (python-genai _transformers.py t_recv_batch_job_destination; js-genai
// tRecvBatchJobDestination).

const s = serverOverMockUpstream({ timezone: 'UTC' })
const KEY = { 'x-goog-api-key': 'AIza-gemini-embed-batch-aaaaaaa' }
const NAME = 'batches/embed7f3a9c01'
const END_TIME = new Date(Math.max(Date.now() - 60_000, new Date().setUTCHours(0, 0, 0, 0))).toISOString()
const vector = Array.from({ length: 8 }, (_, i) => Math.round(Math.sin(i) * 1e6) / 1e6)

const output = {
  inlinedEmbedContentResponses: {
    inlinedResponses: [
      { response: { embedding: { values: vector }, tokenCount: '1200' }, metadata: { key: 'doc-1' } },
      { error: { code: 400, message: 'Request contains an invalid argument.' }, metadata: { key: 'doc-2' } },
      { response: { embedding: { values: vector }, tokenCount: '34' }, metadata: { key: 'doc-3' } },
    ],
  },
}
const operation = {
  name: NAME,
  metadata: {
    '@type': 'type.googleapis.com/google.ai.generativelanguage.v1beta.EmbedContentBatch',
    model: 'models/gemini-embedding-001', displayName: 'docs', state: 'BATCH_STATE_SUCCEEDED', endTime: END_TIME,
    output,
  },
  done: true,
  response: { '@type': 'type.googleapis.com/google.ai.generativelanguage.v1beta.EmbedContentBatchOutput', ...output },
}

/** Half of gemini-embedding-001's list price ($0.15 per million input tokens). */
const half = (tokens: number) => calcPrice({ input_tokens: tokens, output_tokens: 0 }, 'gemini-embedding-001', { providerId: 'google', timestamp: new Date(END_TIME) })!.total_price / 2

describe('Gemini Batch API: an embedding batch', () => {
  it('each result is a call of the batch model, its tokens at half the embedding price, recorded once however often polled', async () => {
    answer(s.upstream, operation)
    for (let i = 0; i < 2; i++) expect((await request(`${s.t.url}/v1beta/${NAME}`, { headers: KEY })).status).toBe(200)
    const got = (await eventually(() => {
      const b = rows(s.t).filter((c) => c.endpoint.startsWith('batch.'))
      return b.length === 2 ? b : undefined
    }))!
    expect(got.map((c) => ({ provider: c.provider, endpoint: c.endpoint, model: c.model, input_tokens: c.input_tokens, output_tokens: c.output_tokens, ts: c.ts, priced: c.priced, cost_usd: c.cost_usd }))).toEqual([
      { provider: 'gemini', endpoint: 'batch.embedContent', model: 'gemini-embedding-001', input_tokens: 1200, output_tokens: 0, ts: Date.parse(END_TIME), priced: 1, cost_usd: half(1200) },
      { provider: 'gemini', endpoint: 'batch.embedContent', model: 'gemini-embedding-001', input_tokens: 34, output_tokens: 0, ts: Date.parse(END_TIME), priced: 1, cost_usd: half(34) },
    ])
    expect(got[0].cost_usd).toBeCloseTo(1200 * 0.075e-6, 15)
    await eventually(() => rows(s.t).filter((c) => c.endpoint === 'batches.get').length === 2)
    await storedAfter(s.t, s.upstream)
    expect(notMarks(rows(s.t)).filter((c) => c.endpoint.startsWith('batch.'))).toHaveLength(2)
  })

  it('an answer too large to hold whole (thousands of vectors) records each result all the same', { timeout: 180_000 }, async () => {
    // 3,072 values a vector (gemini-embedding-001's default), 2,200 results: over the 64 MB held whole.
    const big = Array.from({ length: 3072 }, (_, i) => -0.0123456789 + i * 1e-9)
    const n = 2_200
    const results = Array.from({ length: n }, (_, i) => (i === 1 ? { error: { code: 400, message: 'bad' } } : { response: { embedding: { values: big }, tokenCount: String(10 + i) } }))
    const large = { ...operation, name: 'batches/embedlarge01', metadata: { ...operation.metadata, output: undefined }, response: { inlinedEmbedContentResponses: { inlinedResponses: results } } }
    const body = Buffer.from(JSON.stringify(large))
    expect(body.length).toBeGreaterThan(64 * 1024 * 1024)
    answer(s.upstream, body)
    expect((await request(`${s.t.url}/v1beta/batches/embedlarge01`, { headers: KEY })).status).toBe(200)
    const got = (await eventually(() => {
      const b = rows(s.t).filter((c) => c.endpoint === 'batch.embedContent').slice(2)
      return b.length === n - 1 ? b : undefined
    }, 120_000))!
    const tokens = results.reduce((a, r, i) => a + (i === 1 ? 0 : 10 + i), 0)
    expect(got.reduce((a, c) => a + c.input_tokens, 0)).toBe(tokens)
    for (const c of got) expect(c).toMatchObject({ model: 'gemini-embedding-001', priced: 1, cost_usd: half(c.input_tokens) })
  })

  it('results sent under inlinedResponses (the SDKs rename them when a response holds an embedding) are recorded the same', async () => {
    const results = output.inlinedEmbedContentResponses.inlinedResponses.map((r: any) => (r.response ? { ...r, response: { ...r.response, tokenCount: String(Number(r.response.tokenCount) + 10_000) } } : r))
    const wire = { inlinedResponses: { inlinedResponses: results } }
    const op = { ...operation, name: 'batches/embedwire02', metadata: { ...operation.metadata, output: wire }, response: { ...operation.response, inlinedEmbedContentResponses: undefined, ...wire } }
    answer(s.upstream, op)
    expect((await request(`${s.t.url}/v1beta/batches/embedwire02`, { headers: KEY })).status).toBe(200)
    const got = (await eventually(() => {
      const b = rows(s.t).filter((c) => c.endpoint === 'batch.embedContent' && (c.input_tokens === 11_200 || c.input_tokens === 10_034))
      return b.length === 2 ? b : undefined
    }))!
    expect(got.map((c) => [c.model, c.input_tokens, c.priced, c.cost_usd])).toEqual([
      ['gemini-embedding-001', 11_200, 1, half(11_200)],
      ['gemini-embedding-001', 10_034, 1, half(10_034)],
    ])
  })
})
