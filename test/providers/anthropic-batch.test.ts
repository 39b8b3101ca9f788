import Anthropic from '@anthropic-ai/sdk'
import { calcPrice } from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { fixtureJson } from '../support/fixtures'
import { eventually, request } from '../support/http'
import { type MockUpstream, type Reply, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { storedAfter } from './batch-support'
import { rows } from './ledger'

// Anthropic's Message Batches, through the real Anthropic SDK: `messages.batches.results(id)`
// retrieves the batch, then fetches its `results_url`, an absolute `https://api.anthropic.com/...`
// address. Burnrate points that address back at itself in every batch answer it passes, so the
// results come through it (this machine cannot reach api.anthropic.com: a fetch that went around
// Burnrate fails). Each request that succeeded is recorded once, at half the list price.

const KEY = 'sk-ant-batch-test-aaaaaaaa'
const BATCH = 'msgbatch_01HkcTjaV5uDC8jWR4ZsDV8d'
const REAL_RESULTS_URL = `https://api.anthropic.com/v1/messages/batches/${BATCH}/results`

const basic = fixtureJson('anthropic/messages-nonstream-basic.json')
const cached = fixtureJson('anthropic/messages-nonstream-cache-write-and-read.json')

/** The results file, in the shape Anthropic sends it: one result per line, in any order. */
const RESULTS = Buffer.from(
  [
    { custom_id: 'q-1', result: { type: 'succeeded', message: basic } },
    { custom_id: 'q-2', result: { type: 'errored', error: { type: 'error', error: { type: 'invalid_request_error', message: 'Prompt is too long' } } } },
    { custom_id: 'q-3', result: { type: 'succeeded', message: cached } },
    { custom_id: 'q-4', result: { type: 'expired' } },
  ].map((l) => JSON.stringify(l)).join('\n') + '\n',
)

/** When the batch ended: a minute ago, but today (UTC), so its spend counts in today's budget. */
const ENDED_AT = new Date(Math.max(Date.now() - 60_000, new Date().setUTCHours(0, 0, 0, 0))).toISOString()

const batchObject = (ended: boolean) => ({
  id: BATCH,
  type: 'message_batch',
  processing_status: ended ? 'ended' : 'in_progress',
  request_counts: { processing: ended ? 0 : 4, succeeded: ended ? 2 : 0, errored: ended ? 1 : 0, canceled: 0, expired: ended ? 1 : 0 },
  ended_at: ended ? ENDED_AT : null,
  created_at: '2026-11-28T09:00:00Z',
  expires_at: '2026-11-29T09:00:00Z',
  archived_at: null,
  cancel_initiated_at: null,
  results_url: ended ? REAL_RESULTS_URL : null,
})

/** Half the list price of what a message's usage bills (input, cache writes and reads, output). */
const half = (m: any) =>
  calcPrice(
    { input_tokens: m.usage.input_tokens + m.usage.cache_creation_input_tokens + m.usage.cache_read_input_tokens, cache_write_tokens: m.usage.cache_creation_input_tokens, cache_read_tokens: m.usage.cache_read_input_tokens, output_tokens: m.usage.output_tokens } as any,
    m.model,
    { providerId: 'anthropic', timestamp: new Date() },
  )!.total_price / 2

describe('Anthropic Message Batches: results read through Burnrate, each request recorded once at batch prices', () => {
  let upstream: MockUpstream
  let t: TestServer
  let ended = false
  let gzip = false

  beforeAll(async () => {
    upstream = await startMockUpstream((req): Reply => {
      const json = (body: object): Reply => ({ headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
      const path = req.url.split('?')[0]
      if (req.method === 'POST' && path === '/v1/messages/batches') return json(batchObject(false))
      if (req.method === 'GET' && path === '/v1/messages/batches') return json({ data: [batchObject(ended)], has_more: false, first_id: BATCH, last_id: BATCH })
      if (req.method === 'GET' && path === `/v1/messages/batches/${BATCH}`) return json(batchObject(ended))
      if (req.method === 'GET' && path === `/v1/messages/batches/${BATCH}/results`) {
        return { headers: { 'content-type': 'application/binary' }, chunks: [RESULTS.subarray(0, 100), RESULTS.subarray(100)], encoding: gzip ? 'gzip' : undefined }
      }
      return { status: 404, body: '{"type":"error","error":{"type":"not_found_error","message":"no"}}' }
    })
    t = await startTestServer({ timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-ant-batch-*', daily_limit_usd: 0.000001, action: 'block' }] } }, upstream.url)
  })
  afterAll(async () => {
    await t?.cleanup()
    await upstream?.close()
  })

  const batchRows = () => rows(t).filter((r) => r.endpoint === 'batch.messages')

  it('the SDK creates the batch, follows it and reads its results through Burnrate; each request is a call at half price', async () => {
    const client = new Anthropic({ apiKey: KEY, baseURL: t.url, maxRetries: 0 })
    const created = await client.messages.batches.create({
      requests: [{ custom_id: 'q-1', params: { model: basic.model, max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }] } }],
    })
    expect(created).toMatchObject({ id: BATCH, results_url: null })
    ended = true
    // As Anthropic sent it, but pointed at Burnrate (the client's own address of it).
    const got = await client.messages.batches.retrieve(BATCH)
    expect(got.results_url).toBe(`${t.url}/v1/messages/batches/${BATCH}/results`)
    expect({ ...got, results_url: REAL_RESULTS_URL }).toEqual(batchObject(true))

    const seen: string[] = []
    for await (const r of await client.messages.batches.results(BATCH)) seen.push(`${r.custom_id}:${r.result.type}`)
    expect(seen).toEqual(['q-1:succeeded', 'q-2:errored', 'q-3:succeeded', 'q-4:expired'])
    const results = upstream.requests.filter((r) => r.url.endsWith('/results'))
    expect(results).toHaveLength(1)

    const calls = (await eventually(() => (batchRows().length === 2 ? batchRows() : undefined)))!
    expect(calls.map((c) => [c.response_id, c.model, c.input_tokens, c.cache_write_tokens, c.cache_read_tokens, c.output_tokens])).toEqual([
      [basic.id, basic.model, 12, 0, 0, 29],
      [cached.id, cached.model, 3 + 418 + 1111, 418, 1111, 33],
    ])
    expect(calls[0].cost_usd).toBe(half(basic))
    expect(calls[1].cost_usd).toBe(half(cached))
    for (const c of calls) expect(c).toMatchObject({ provider: 'anthropic', api_key_hash: hashKey(KEY), status: 200, priced: 1, source: 'proxy' })
    // Dated when the batch ended, as the batch answer the SDK read just before said.
    for (const c of calls) expect(c.ts).toBe(Date.parse(ENDED_AT))
  })

  it('reading them again (compressed, through the /anthropic mount) adds nothing, though the key is over its block limit', async () => {
    gzip = true
    const client = new Anthropic({ apiKey: KEY, baseURL: `${t.url}/anthropic`, maxRetries: 0 })
    // The key's spend is over its limit now: a new message is refused, the batch's reads are not.
    await expect(client.messages.create({ model: basic.model, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })).rejects.toMatchObject({ status: 429 })
    const list = await client.messages.batches.list()
    expect(list.data[0].results_url).toBe(`${t.url}/anthropic/v1/messages/batches/${BATCH}/results`)
    const seen: string[] = []
    for await (const r of await client.messages.batches.results(BATCH)) seen.push(r.custom_id)
    expect(seen).toEqual(['q-1', 'q-2', 'q-3', 'q-4'])
    await eventually(() => rows(t).filter((r) => r.endpoint === 'messages.batches.results').length === 2)
    await storedAfter(t, upstream)
    expect(batchRows()).toHaveLength(2)
  })

  it('an answer without a results address passes byte for byte', async () => {
    ended = false
    const r = await request(`${t.url}/v1/messages/batches/${BATCH}`, { headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' } })
    expect(r.text).toBe(JSON.stringify(batchObject(false)))
  })
})
