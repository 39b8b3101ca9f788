import { describe, expect, it } from 'vitest'
import { eventually, postJson, request } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, rows } from './ledger'

// xAI's Batch API (https://docs.x.ai/developers/advanced-api-usage/batch-api): a batch is made
// (`POST /v1/batches`), requests are added to it (`POST /v1/batches/{id}/requests`, each billed
// when the batch runs it), and it is followed and read back: `GET /v1/batches`,
// `GET /v1/batches/{id}`, `GET /v1/batches/{id}/requests`, `GET /v1/batches/{id}/results`, and
// cancelled (`POST /v1/batches/{id}:cancel`). The reads and the cancel add no spend: a key over
// its block limit still reads its batch's results.

const s = serverOverMockUpstream({
  timezone: 'UTC',
  budgets: {
    rules: [
      { api_key_pattern: 'xai-over-*', daily_limit_usd: 0, action: 'block' },
      { api_key_pattern: 'xai-rpm-*', daily_limit_usd: 100, requests_per_minute: 1, action: 'block' },
    ],
  },
})

const H = { authorization: 'Bearer xai-over-000000000000001' }
const BATCH = 'batch_7c1e2d8a-0000-4000-8000-000000000001'

describe('xAI Batch API: reads and cancels of a key over its block limit', () => {
  it('a new chat completion is refused: the key is over its limit', async () => {
    const r = await postJson(`${s.t.url}/xai/v1/chat/completions`, { model: 'grok-4', messages: [] }, H)
    expect(r.status).toBe(429)
  })

  it.each([
    ['GET', `/batches`, 'batches.list'],
    ['GET', `/batches/${BATCH}`, 'batches.retrieve'],
    ['GET', `/batches/${BATCH}/requests`, 'batches.requests.list'],
    ['GET', `/batches/${BATCH}/results?page_size=100`, 'batches.results'],
    ['POST', `/batches/${BATCH}:cancel`, 'batches.cancel'],
  ])('%s %s passes to xAI and is recorded as %s, free', async (method, path, endpoint) => {
    answer(s.upstream, { batch_id: BATCH, results: [], pagination_token: null })
    const before = s.upstream.requests.length
    const r = await request(`${s.t.url}/xai/v1${path}`, { method, headers: { ...H, 'content-type': 'application/json' }, body: method === 'POST' ? '{}' : undefined })
    expect(r.status).toBe(200)
    expect(s.upstream.requests.length).toBe(before + 1)
    expect(s.upstream.requests[before].url).toBe(`/v1${path}`)
    const row = await eventually(() => rows(s.t).find((c) => c.endpoint === endpoint))
    expect(row).toMatchObject({ provider: 'xai', status: 200, cost_usd: 0 })
  })

  it('adding requests to a batch is not free: it is refused like any billed request', async () => {
    const before = s.upstream.requests.length
    const r = await postJson(`${s.t.url}/xai/v1/batches/${BATCH}/requests`, { batch_requests: [{ batch_request_id: 'q-1', batch_request: { chat_get_completion: { model: 'grok-4', messages: [] } } }] }, H)
    expect(r.status).toBe(429)
    expect(s.upstream.requests.length).toBe(before)
  })
})

describe('xAI Batch API: reads are not counted against requests_per_minute', () => {
  it('three reads of the results leave the one request a minute to a chat completion', async () => {
    const R = { authorization: 'Bearer xai-rpm-000000000000001' }
    answer(s.upstream, { batch_id: BATCH, results: [], pagination_token: null })
    for (let i = 0; i < 3; i++) expect((await request(`${s.t.url}/xai/v1/batches/${BATCH}/results`, { headers: R })).status).toBe(200)
    const chat = { id: 'c1', object: 'chat.completion', created: 1770774058, model: 'grok-4', choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }
    answer(s.upstream, chat)
    expect((await postJson(`${s.t.url}/xai/v1/chat/completions`, { model: 'grok-4', messages: [] }, R)).status).toBe(200)
    expect((await postJson(`${s.t.url}/xai/v1/chat/completions`, { model: 'grok-4', messages: [] }, R)).status).toBe(429)
  })
})
