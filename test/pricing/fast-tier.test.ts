import { calcPrice } from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { answer, recorded, rows } from '../providers/ledger'

/**
 * A faster tier costs more per token, by model: Anthropic's fast mode (the answer's
 * `usage.speed: "fast"`) and OpenAI's Fast mode (formerly Priority processing,
 * `service_tier: "priority"`). The price data has no such rates, so such a call is priced at a
 * `pricing.overrides` entry with `speed: fast` for its model, else (OpenAI's Priority prices with
 * no override: ./openai-priority.test.ts) at the standard price; the
 * mark is kept, so re-pricing gives it its fast price again. Through a running Burnrate and its
 * real SQLite ledger.
 */

let upstream: MockUpstream
let t: TestServer

const OVERRIDES = [
  { model: 'claude-opus-4-6', provider: 'anthropic', speed: 'fast', input_mtok: 30, output_mtok: 150, cache_read_mtok: 3, cache_write_mtok: 37.5 },
  { model: 'gpt-5*', provider: 'openai', speed: 'fast', input_mtok: 2.5, output_mtok: 20, cache_read_mtok: 0.25 },
]

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer({ ...ADMIN_CONFIG, pricing: { overrides: OVERRIDES } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

const KEY = { 'x-api-key': 'sk-ant-fast-tier-000000000001' }
const OPENAI = { authorization: 'Bearer sk-proj-fast-tier-00000000000001' }

describe('fast tiers', () => {
  it("Anthropic's fast mode: priced at the model's fast price; the same model at standard speed at its list", async () => {
    const model = 'claude-opus-4-6'
    const usage = { input_tokens: 200, cache_read_input_tokens: 10_000, output_tokens: 800 }
    answer(upstream, { id: 'msg_f', type: 'message', model, content: [], usage: { ...usage, speed: 'fast' } })
    const fast = await recorded(t, () => postJson(`${t.url}/v1/messages`, { model, speed: 'fast', max_tokens: 1000, messages: [] }, KEY))
    expect(fast).toMatchObject({ model, input_tokens: 10_200, cache_read_tokens: 10_000, output_tokens: 800, priced: 1 })
    expect(fast.cost_usd).toBeCloseTo((200 * 30 + 10_000 * 3 + 800 * 150) / 1e6, 15)
    expect(JSON.parse(fast.usage_extra)).toEqual({ fast: true })

    answer(upstream, { id: 'msg_s', type: 'message', model, content: [], usage: { ...usage, speed: 'standard' } })
    const standard = await recorded(t, () => postJson(`${t.url}/v1/messages`, { model, max_tokens: 1000, messages: [] }, KEY))
    expect(standard.cost_usd).toBe(calcPrice({ input_tokens: 10_200, cache_read_tokens: 10_000, output_tokens: 800 }, model, { providerId: 'anthropic', timestamp: new Date(standard.ts) })!.total_price)
    expect(standard.cost_usd * 5).toBeLessThan(fast.cost_usd)
  })

  it("OpenAI's Fast mode (service_tier priority): priced at the fast price of the model's prefix; re-pricing keeps it", async () => {
    const model = 'gpt-5-2025-08-07'
    answer(upstream, { id: 'chatcmpl-f', object: 'chat.completion', model, service_tier: 'priority', choices: [], usage: { prompt_tokens: 4_000, completion_tokens: 500, prompt_tokens_details: { cached_tokens: 3_000 } } })
    const row = await recorded(t, () => postJson(`${t.url}/v1/chat/completions`, { model, service_tier: 'priority', messages: [] }, OPENAI))
    const fastCost = (1_000 * 2.5 + 3_000 * 0.25 + 500 * 20) / 1e6
    expect(row).toMatchObject({ model, input_tokens: 4_000, cache_read_tokens: 3_000, output_tokens: 500, priced: 1 })
    expect(row.cost_usd).toBeCloseTo(fastCost, 15)
    // A runtime price for the model is its standard price: re-pricing leaves the fast call at its fast price.
    expect((await admin(t.url, 'PUT', `/prices/openai/${model}`, { body: { input_mtok: 1, output_mtok: 8 } })).status).toBe(200)
    expect((await admin(t.url, 'POST', `/prices/openai/${model}/reprice?all=true`)).status).toBe(200)
    expect(rows(t).find((r) => r.id === row.id).cost_usd).toBeCloseTo(fastCost, 15)
  })

  it('a block rule reserves a call asking for fast mode at its fast price: refused before it goes upstream where the standard one passes', async () => {
    const t2 = await startTestServer(
      {
        pricing: { overrides: OVERRIDES },
        budgets: { rules: [{ api_key_pattern: 'sk-ant-fast-budget-*', daily_limit_usd: 0.1, action: 'block', reserve: 'max_tokens' }] },
      },
      upstream.url,
    )
    try {
      const key = { 'x-api-key': 'sk-ant-fast-budget-0000000001' }
      const body = { model: 'claude-opus-4-6', max_tokens: 1000, messages: [{ role: 'user', content: 'hi' }] }
      // Worst case at the standard price: about $0.025 (1,000 output tokens at $25 a million); at the fast price about $0.15.
      answer(upstream, { id: 'msg_b', type: 'message', model: 'claude-opus-4-6', content: [], usage: { input_tokens: 10, output_tokens: 10, speed: 'standard' } })
      const before = upstream.requests.length
      expect((await postJson(`${t2.url}/v1/messages`, body, key)).status).toBe(200)
      const refused = await postJson(`${t2.url}/v1/messages`, { ...body, speed: 'fast' }, key)
      expect(refused.status).toBe(429)
      expect(refused.json().error.type).toBe('budget_exceeded')
      expect(upstream.requests.length).toBe(before + 1)
    } finally {
      await t2.cleanup()
    }
  })
})
