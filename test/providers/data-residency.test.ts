import { calcPrice } from '@pydantic/genai-prices'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { anthropicStream } from '../support/fixtures'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { answer, recorded, rows } from './ledger'

/**
 * Where inference runs changes the price. Anthropic bills every token of a call that ran in the
 * US only (`inference_geo: "us"`, Claude Opus 4.6 and later) at 1.1x; Vertex AI bills Claude
 * Sonnet 4.5 and every later model through a regional endpoint 10% above its `global` one. Both
 * through a running Burnrate and its real SQLite ledger, priced against the library's list;
 * re-pricing keeps the premium.
 */

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer({ ...ADMIN_CONFIG, providers: { vertex: { base_url: upstream.url } } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})
beforeEach(() => {
  upstream.requests.length = 0
})

const KEY = { 'x-api-key': 'sk-ant-residency-00000000001' }
const GOOGLE = { authorization: 'Bearer ya29.a0-burnrate-residency-token-0001' }

function list(providerId: string, usage: Record<string, number>, model: string, ts: number): number {
  const p = calcPrice(usage, model, { providerId, timestamp: new Date(ts) })
  expect(p, `${providerId} prices ${model}`).not.toBeNull()
  return p!.total_price
}

describe('Anthropic: US-only inference', () => {
  const model = 'claude-opus-4-6'
  const tokens = { input_tokens: 1_025, cache_read_tokens: 1_000, output_tokens: 150 }

  it('an answer that says it ran in the US only costs 1.1x every token price; the same in global costs the list', async () => {
    answer(upstream, anthropicStream({ id: 'msg_geo', model, usage: { input_tokens: 25, cache_read_input_tokens: 1_000, output_tokens: 1, inference_geo: 'us' } }, 150), 'sse')
    const us = await recorded(t, () => postJson(`${t.url}/v1/messages`, { model, stream: true, max_tokens: 200, inference_geo: 'us', messages: [] }, KEY))
    expect(JSON.parse(upstream.requests[0].body.toString())).toMatchObject({ inference_geo: 'us' })
    expect(us).toMatchObject({ provider: 'anthropic', model, ...tokens, priced: 1, estimated: 0 })
    expect(us.cost_usd).toBe(list('anthropic', tokens, model, us.ts) * 1.1)
    expect(JSON.parse(us.usage_extra)).toEqual({ data_residency: true })

    answer(upstream, { id: 'msg_g', type: 'message', model, content: [], usage: { input_tokens: 25, cache_read_input_tokens: 1_000, output_tokens: 150, inference_geo: 'global' } })
    const global = await recorded(t, () => postJson(`${t.url}/v1/messages`, { model, max_tokens: 200, messages: [] }, KEY))
    expect(global.cost_usd).toBe(list('anthropic', tokens, model, global.ts))
    expect(global.usage_extra).toBeNull()
  })

  it("a workspace whose default is US-only: the answer's word is enough, the request need not say", async () => {
    answer(upstream, { id: 'msg_w', type: 'message', model, content: [], usage: { input_tokens: 25, cache_read_input_tokens: 1_000, output_tokens: 150, inference_geo: 'us' } })
    const row = await recorded(t, () => postJson(`${t.url}/v1/messages`, { model, max_tokens: 200, messages: [] }, KEY))
    expect(row.cost_usd).toBe(list('anthropic', tokens, model, row.ts) * 1.1)
  })

  it('re-pricing keeps the premium: an unpriced model given a price is priced at 1.1x it', async () => {
    const unknown = 'claude-opus-9-9-residency'
    answer(upstream, { id: 'msg_u', type: 'message', model: unknown, content: [], usage: { input_tokens: 1_000_000, output_tokens: 1_000_000, inference_geo: 'us' } })
    const row = await recorded(t, () => postJson(`${t.url}/v1/messages`, { model: unknown, max_tokens: 200, messages: [] }, KEY))
    expect(row).toMatchObject({ priced: 0, cost_usd: 0 })
    expect((await admin(t.url, 'PUT', `/prices/anthropic/${unknown}`, { body: { input_mtok: 10, output_mtok: 50 } })).status).toBe(200)
    const r = await admin(t.url, 'POST', `/prices/anthropic/${unknown}/reprice?all=true`)
    expect(r.status).toBe(200)
    expect(r.json()).toMatchObject({ repriced: 1 })
    // $10 + $50 for a million tokens each, times 1.1.
    expect(rows(t).find((x) => x.id === row.id)).toMatchObject({ priced: 1, cost_usd: 60 * 1.1 })
  })
})

describe('Vertex AI: Claude through a regional endpoint', () => {
  const answerOf = (model: string) => ({ id: 'msg_v', type: 'message', model, content: [], usage: { input_tokens: 300, output_tokens: 40 } })
  const call = (location: string, model: string) =>
    recorded(t, () => postJson(`${t.url}/vertex/v1/projects/p/locations/${location}/publishers/anthropic/models/${model}:rawPredict`, { anthropic_version: 'vertex-2023-10-16', max_tokens: 64, messages: [] }, GOOGLE))
  const tokens = { input_tokens: 300, output_tokens: 40 }

  it('Claude Sonnet 4.5 in us-east5 costs 10% more than through global', async () => {
    answer(upstream, answerOf('claude-sonnet-4-5-20250929'))
    const regional = await call('us-east5', 'claude-sonnet-4-5@20250929')
    const global = await call('global', 'claude-sonnet-4-5@20250929')
    const price = list('google', tokens, 'claude-sonnet-4-5-20250929', regional.ts)
    expect(regional).toMatchObject({ provider: 'vertex', model: 'claude-sonnet-4-5-20250929', ...tokens, priced: 1 })
    expect(regional.cost_usd).toBe(price * 1.1)
    expect(JSON.parse(regional.usage_extra)).toEqual({ data_residency: true })
    expect(global.cost_usd).toBe(price)
    expect(global.usage_extra).toBeNull()
  })

  it('a multi-region (us, eu) keeps the data in its geography as a region does, and costs as one', async () => {
    answer(upstream, answerOf('claude-sonnet-4-5-20250929'))
    for (const loc of ['us', 'eu']) {
      const row = await call(loc, 'claude-sonnet-4-5@20250929')
      expect(row, loc).toMatchObject({ provider: 'vertex', model: 'claude-sonnet-4-5-20250929', ...tokens, priced: 1 })
      expect(row.cost_usd, loc).toBe(list('google', tokens, 'claude-sonnet-4-5-20250929', row.ts) * 1.1)
      expect(JSON.parse(row.usage_extra), loc).toEqual({ data_residency: true })
    }
  })

  it('a model from before Sonnet 4.5 costs the same in a region', async () => {
    answer(upstream, answerOf('claude-sonnet-4-20250514'))
    const row = await call('us-east5', 'claude-sonnet-4@20250514')
    expect(row.cost_usd).toBe(list('google', tokens, 'claude-sonnet-4-20250514', row.ts))
  })
})
