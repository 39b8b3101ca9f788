import { calcPrice } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { RAN, notMarks, storedAfter } from './batch-support'
import { eventually, postJson, request } from '../support/http'
import { fixture } from '../support/fixtures'
import type { MockUpstream } from '../support/mock-upstream'
import { serverOverMockUpstream } from '../support/server'
import { rows } from './ledger'

// The Batch APIs of Groq, Together AI and Mistral: OpenAI's shape, their output files read with
// `GET /files/{id}/content` (Groq's under `/openai/v1`), one line per request `{id?, custom_id,
// response: {status_code, body}, error?}` (test/fixtures/openai-compatible/*-batch-*.jsonl, in the
// shapes each provider documents). Each request that succeeded is a call of its own, once, by the
// file and its `custom_id`. Mistral documents "a 50% discount" for batches: half the list price.
// Groq's published discount has changed (none, then 25%) and Together discounts only the models its
// list names: their tokens are recorded unpriced, never at a guessed rate.

/** A fixture's lines with each answer's `created` set to when the test's requests "ran" (today, so they count in today's spend). */
function ranToday(path: string): Buffer {
  const lines = fixture(path).toString('utf8').split('\n').filter(Boolean)
  return Buffer.from(
    lines
      .map((l, i) => {
        const o = JSON.parse(l)
        if (o.response?.body && typeof o.response.body.created === 'number') o.response.body.created = RAN + i
        return JSON.stringify(o)
      })
      .join('\n') + '\n',
  )
}

const GROQ = ranToday('openai-compatible/groq-batch-output.jsonl')
const TOGETHER = ranToday('openai-compatible/together-batch-output.jsonl')
const MISTRAL = ranToday('openai-compatible/mistral-batch-output.jsonl')
const MISTRAL_EMBED = fixture('openai-compatible/mistral-batch-embeddings-output.jsonl')

const FILES: Record<string, Buffer> = {
  '/openai/v1/files/file_01k5h3c7out/content': GROQ,
  '/v1/files/file-together-out-1/content': TOGETHER,
  '/v1/files/7ad3e1f2-0b9c-4d8e-a1f2-3b4c5d6e7f80/content': MISTRAL,
  '/v1/files/0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f/content': MISTRAL_EMBED,
}

/** A finished Mistral batch job, as `GET /v1/batch/jobs/{id}` answers it. */
const MISTRAL_JOB = {
  id: 'b2f1e0d3-8c7b-4a69-9e5d-4c3b2a1f0e9d', object: 'batch', input_files: ['5e4d3c2b-1a09-4f8e-9d7c-6b5a4f3e2d1c'], metadata: null,
  endpoint: '/v1/chat/completions', model: 'mistral-small-latest', agent_id: null, output_file: '7ad3e1f2-0b9c-4d8e-a1f2-3b4c5d6e7f80', error_file: null,
  errors: [], outputs: null, status: 'SUCCESS', created_at: RAN - 600, total_requests: 3, completed_requests: 3, succeeded_requests: 2, failed_requests: 1,
  started_at: RAN - 590, completed_at: RAN + 10,
}

function serveFiles(upstream: MockUpstream): void {
  upstream.setResponder((req) => {
    const body = FILES[req.url ?? '']
    if (body) return { headers: { 'content-type': 'application/octet-stream' }, body }
    if (req.url?.startsWith('/v1/batch/jobs')) return { headers: { 'content-type': 'application/json' }, body: JSON.stringify(MISTRAL_JOB) }
    return { status: 404, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: { message: 'not found' } }) }
  })
}

// Keys over their day as soon as they spend anything: a results file is a free read all the same.
const s = serverOverMockUpstream({ ...ADMIN_CONFIG, timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'over-*', daily_limit_usd: 0.000001, action: 'block' }] } })

const batchRows = (provider: string) => rows(s.t).filter((c) => c.provider === provider && c.endpoint.startsWith('batch.'))
const pick = (c: any) => ({
  model: c.model, endpoint: c.endpoint, response_id: c.response_id, input_tokens: c.input_tokens, cache_read_tokens: c.cache_read_tokens,
  output_tokens: c.output_tokens, ts: c.ts, priced: c.priced, cost_usd: c.cost_usd,
})

describe('Batch API output files of the OpenAI-compatible providers', () => {
  it("Groq's: each request that succeeded is recorded with its model and tokens, unpriced; the file passes unchanged and its read costs nothing", async () => {
    serveFiles(s.upstream)
    const key = 'over-groq-batch-0001'
    const r = await request(`${s.t.url}/groq/v1/files/file_01k5h3c7out/content`, { headers: { authorization: `Bearer ${key}` } })
    expect(r.status).toBe(200)
    expect(r.body.equals(GROQ)).toBe(true)
    const got = (await eventually(() => (batchRows('groq').length === 2 ? batchRows('groq') : undefined)))!
    expect(got.map(pick)).toEqual([
      { model: 'llama-3.1-8b-instant', endpoint: 'batch.chat.completions', response_id: 'chatcmpl-5e2b6a1c-9d3f-4b8e-a1c2-3d4e5f6a7b8c', input_tokens: 48, cache_read_tokens: 0, output_tokens: 2, ts: RAN * 1000, priced: 0, cost_usd: 0 },
      { model: 'llama-3.3-70b-versatile', endpoint: 'batch.chat.completions', response_id: 'chatcmpl-6f3c7b2d-0e4a-4c9f-b2d3-4e5f6a7b8c9d', input_tokens: 1024, cache_read_tokens: 512, output_tokens: 180, ts: (RAN + 1) * 1000, priced: 0, cost_usd: 0 },
    ])
    for (const c of got) {
      expect(c).toMatchObject({ api_key_hash: hashKey(key), status: 200, estimated: 0, source: 'proxy' })
      expect(JSON.parse(c.usage_extra)).toEqual({ batch: true, batch_rate_unknown: true })
    }
    // The price data does price the model: it is the batch rate that is not known.
    expect(calcPrice({ input_tokens: 48, output_tokens: 2 }, 'llama-3.1-8b-instant', { providerId: 'groq' })).not.toBeNull()
    expect(await eventually(() => rows(s.t).find((c) => c.provider === 'groq' && c.endpoint === 'files.content'))).toMatchObject({ cost_usd: 0, input_tokens: 0 })
  })

  it("Together's: the same, unpriced (a discount only for the models Together's list names)", async () => {
    serveFiles(s.upstream)
    const r = await request(`${s.t.url}/together/v1/files/file-together-out-1/content`, { headers: { authorization: 'Bearer over-together-batch-1' } })
    expect(r.status).toBe(200)
    expect(r.body.equals(TOGETHER)).toBe(true)
    const got = (await eventually(() => (batchRows('together').length === 2 ? batchRows('together') : undefined)))!
    expect(got.map(pick)).toEqual([
      { model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', endpoint: 'batch.chat.completions', response_id: 'o9Xq2Lm-3NKUce-98a1f2b3c4d5e6f7', input_tokens: 39, cache_read_tokens: 0, output_tokens: 10, ts: RAN * 1000, priced: 0, cost_usd: 0 },
      { model: 'openai/gpt-oss-20b', endpoint: 'batch.chat.completions', response_id: 'o9Xq2Ln-3NKUce-98a1f2b3c4d5e6f8', input_tokens: 73, cache_read_tokens: 0, output_tokens: 42, ts: (RAN + 1) * 1000, priced: 0, cost_usd: 0 },
    ])
    for (const c of got) expect(JSON.parse(c.usage_extra)).toEqual({ batch: true, batch_rate_unknown: true })
  })

  it("Mistral's: each chat completion at half the model's list price, counted in the key's day; an errored request makes no row", async () => {
    serveFiles(s.upstream)
    const key = 'over-mistral-batch-1'
    const H = { authorization: `Bearer ${key}` }
    const r = await request(`${s.t.url}/mistral/v1/files/7ad3e1f2-0b9c-4d8e-a1f2-3b4c5d6e7f80/content`, { headers: H })
    expect(r.status).toBe(200)
    expect(r.body.equals(MISTRAL)).toBe(true)
    const got = (await eventually(() => (batchRows('mistral').length === 2 ? batchRows('mistral') : undefined)))!
    const half = (input: number, output: number, ranAt: number) => {
      const p = calcPrice({ input_tokens: input, output_tokens: output }, 'mistral-small-latest', { providerId: 'mistral', timestamp: new Date(ranAt * 1000) })
      expect(p, 'the price data prices mistral-small-latest').not.toBeNull()
      return p!.total_price / 2
    }
    expect(got.map(pick)).toEqual([
      { model: 'mistral-small-latest', endpoint: 'batch.chat.completions', response_id: 'cmpl-e5cc70bb28c444948073e77776eb30ef', input_tokens: 14, cache_read_tokens: 0, output_tokens: 61, ts: RAN * 1000, priced: 1, cost_usd: half(14, 61, RAN) },
      { model: 'mistral-small-latest', endpoint: 'batch.chat.completions', response_id: 'cmpl-0a7c1f9e3b2d4c5e8f6a1b2c3d4e5f60', input_tokens: 14, cost_usd: half(14, 88, RAN + 1), cache_read_tokens: 0, output_tokens: 88, ts: (RAN + 1) * 1000, priced: 1 },
    ])
    for (const c of got) {
      expect(c.cost_usd).toBeGreaterThan(0)
      expect(JSON.parse(c.usage_extra)).toEqual({ batch: true })
    }
    // The requests count in the key's day: it is over its limit, so a model call is refused...
    const refused = await postJson(`${s.t.url}/mistral/v1/chat/completions`, { model: 'mistral-small-latest', messages: [{ role: 'user', content: 'hi' }] }, H)
    expect(refused.status).toBe(429)
    // ...and it still follows its job, lists and cancels jobs, and reads its results file.
    for (const [method, path] of [['GET', `/batch/jobs/${MISTRAL_JOB.id}`], ['GET', '/batch/jobs?page=0&page_size=100'], ['POST', `/batch/jobs/${MISTRAL_JOB.id}/cancel`]]) {
      expect((await request(`${s.t.url}/mistral/v1${path}`, { method, headers: H })).status, `${method} ${path}`).toBe(200)
    }
    expect((await request(`${s.t.url}/mistral/v1/files/7ad3e1f2-0b9c-4d8e-a1f2-3b4c5d6e7f80/content`, { headers: H })).status).toBe(200)
    const follow = (await eventually(() => rows(s.t).find((c) => c.provider === 'mistral' && c.endpoint === 'batches.retrieve')))!
    expect(follow).toMatchObject({ status: 200, cost_usd: 0 })
  })

  it("Mistral's embeddings at half the embedding price; an OCR page (billed by the page) makes no row", async () => {
    serveFiles(s.upstream)
    const r = await request(`${s.t.url}/mistral/v1/files/0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f/content`, { headers: { authorization: 'Bearer mistral-embed-batch-1' } })
    expect(r.status).toBe(200)
    const embed = () => rows(s.t).find((c) => c.endpoint === 'batch.embeddings')
    const got = (await eventually(embed))!
    const p = calcPrice({ input_tokens: 9, output_tokens: 0 }, 'mistral-embed', { providerId: 'mistral', timestamp: new Date(got.ts) })!.total_price
    expect(got).toMatchObject({ provider: 'mistral', model: 'mistral-embed', input_tokens: 9, output_tokens: 0, priced: 1, cost_usd: p / 2 })
    expect(got.ts).toBeLessThanOrEqual(Date.now())
    await eventually(() => rows(s.t).filter((c) => c.provider === 'mistral' && c.endpoint === 'files.content').length === 3)
    expect(rows(s.t).filter((c) => c.provider === 'mistral' && c.endpoint.startsWith('batch.') && c.model.startsWith('mistral-ocr'))).toHaveLength(0)
  })

  it("re-pricing keeps Groq's unpriced, an admin price for the model included, and Mistral's at half", async () => {
    expect((await admin(s.t.url, 'PUT', '/prices/groq/llama-3.1-8b-instant', { body: { input_mtok: 1, output_mtok: 2 } })).status).toBe(200)
    expect((await admin(s.t.url, 'POST', '/prices/groq/llama-3.1-8b-instant/reprice?all=true')).status).toBe(200)
    const groq = batchRows('groq').find((c) => c.model === 'llama-3.1-8b-instant')
    expect(groq).toMatchObject({ priced: 0, cost_usd: 0, input_tokens: 48, output_tokens: 2 })
    expect(JSON.parse(groq.usage_extra)).toEqual({ batch: true, batch_rate_unknown: true })
    expect((await admin(s.t.url, 'DELETE', '/prices/groq/llama-3.1-8b-instant')).status).toBe(204)

    expect((await admin(s.t.url, 'PUT', '/prices/mistral/mistral-small-latest', { body: { input_mtok: 1, output_mtok: 2 } })).status).toBe(200)
    expect((await admin(s.t.url, 'POST', '/prices/mistral/mistral-small-latest/reprice?all=true')).status).toBe(200)
    const mine = batchRows('mistral').filter((c) => c.model === 'mistral-small-latest')
    expect(mine).toHaveLength(2)
    for (const c of mine) expect(c.cost_usd).toBeCloseTo((c.input_tokens * 1 + c.output_tokens * 2) / 1e6 / 2, 15)
    expect((await admin(s.t.url, 'DELETE', '/prices/mistral/mistral-small-latest')).status).toBe(204)
  })

  it('reading the files again adds nothing', async () => {
    serveFiles(s.upstream)
    const before = rows(s.t).filter((c) => c.endpoint.startsWith('batch.')).length
    const reads = rows(s.t).filter((c) => c.endpoint === 'files.content').length
    for (const path of ['/groq/v1/files/file_01k5h3c7out/content', '/together/v1/files/file-together-out-1/content', '/mistral/v1/files/7ad3e1f2-0b9c-4d8e-a1f2-3b4c5d6e7f80/content']) {
      expect((await request(`${s.t.url}${path}`, { headers: { authorization: 'Bearer again-0001' } })).status).toBe(200)
    }
    await eventually(() => rows(s.t).filter((c) => c.endpoint === 'files.content').length === reads + 3)
    await storedAfter(s.t, s.upstream)
    expect(notMarks(rows(s.t)).filter((c) => c.endpoint.startsWith('batch.'))).toHaveLength(before)
  })
})
