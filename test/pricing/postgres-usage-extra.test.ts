import { calcPrice } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { fixture, sseChunks } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * On PostgreSQL (`storage.url`) too, a call's web searches are stored with it (`usage_extra`) and
 * re-pricing with `all=true` charges them again (test/pricing/usage-extra.test.ts: SQLite, every kind).
 */

const MODEL = 'gpt-5-2025-08-07'
const h = usePostgres({
  upstream: () => ({
    status: 200,
    headers: { 'content-type': 'text/event-stream; charset=utf-8' },
    chunks: sseChunks(fixture('openai-responses/responses-stream-cached-reasoning.sse')),
    delayMs: 1,
  }),
})

describe('re-pricing on PostgreSQL keeps what a call was billed beyond its token columns', () => {
  it('a web-search call recorded under a runtime price gets its search fee back when the price is removed and the model re-priced', async () => {
    const url = h.database()
    const t = await h.server({ url, config: ADMIN_CONFIG })
    const store = h.store(url)
    expect((await admin(t.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 1, output_mtok: 1 } })).status).toBe(200)
    const r = await postJson(`${t.url}/v1/responses`, { model: MODEL, stream: true, input: 'hi' }, { authorization: 'Bearer sk-test-pg-usage-extra-0001' })
    expect(r.status).toBe(200)
    const first = (await eventually(() => store.get<{ id: number; ts: number; cost_usd: number; usage_extra: string | null }>(
      'SELECT id, ts, cost_usd, usage_extra FROM calls WHERE model = @model', { model: MODEL },
    ), 60_000))!
    // $1 per million tokens, searches free (a runtime price is per token).
    expect(first.cost_usd).toBeCloseTo((9463 + 582) / 1e6, 15)
    expect(JSON.parse(first.usage_extra!)).toEqual({ web_searches: 1 })

    expect((await admin(t.url, 'DELETE', `/prices/openai/${MODEL}`)).status).toBe(204)
    const rep = await admin(t.url, 'POST', `/prices/openai/${MODEL}/reprice?all=true`)
    expect(rep.status).toBe(200)
    const want = calcPrice({ input_tokens: 9463, cache_read_tokens: 8320, output_tokens: 582, web_searches: 1 }, MODEL, { providerId: 'openai', timestamp: new Date(first.ts) })!.total_price
    expect(rep.json()).toMatchObject({ repriced: 1, cost_usd_after: want })
    expect(want).toBeCloseTo(((9463 - 8320) * 1.25 + 8320 * 0.125 + 582 * 10) / 1e6 + 10 / 1000, 15)
    expect((await store.get<{ cost_usd: number }>('SELECT cost_usd FROM calls WHERE id = @id', { id: first.id }))!.cost_usd).toBe(want)
  })
})
