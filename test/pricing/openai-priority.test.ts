import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { silentLogger } from '../../src/main/log'
import { answer, libraryPrice, recorded, rows } from '../providers/ledger'

/**
 * A call OpenAI's Priority processing (Fast mode since July 30, 2026) served, as its answer's
 * `service_tier` says, is billed at the model's Priority prices, which the price data does not
 * have (openai.com/api-priority-processing, now /api-fast-mode): gpt-5 $2.50 input, $0.25
 * cached input, $20 output per 1M tokens, twice its Standard $1.25 / $0.125 / $10. Through a
 * running Burnrate (real HTTP on 127.0.0.1, the mock upstream as OpenAI, the real SQLite ledger).
 */

let upstream: MockUpstream
let t: TestServer
const warnings: string[] = []

/** A `speed: fast` override for gpt-4.1 (the snapshot its answers name) at prices of its own: the user's price wins over the published one. */
const OVERRIDES = [{ model: 'gpt-4.1-2025-04-14', provider: 'openai', speed: 'fast', input_mtok: 9, output_mtok: 90 }]

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer({ ...ADMIN_CONFIG, pricing: { overrides: OVERRIDES } }, upstream.url, undefined, {
    log: { ...silentLogger, warn: (m) => warnings.push(m) },
  })
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

const OPENAI = { authorization: 'Bearer sk-proj-priority-tier-000000000001' }

/** A Responses API answer with a usage and the tier that served it. */
function response(model: string, input: number, cached: number, output: number, tier: string) {
  return {
    id: 'resp_priority_' + Math.random().toString(36).slice(2),
    object: 'response',
    created_at: 1764950000,
    status: 'completed',
    model,
    output: [],
    service_tier: tier,
    usage: { input_tokens: input, input_tokens_details: { cached_tokens: cached }, output_tokens: output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: input + output },
  }
}

describe('OpenAI Priority processing (service_tier "priority")', () => {
  it('a gpt-5 call Priority served is recorded at the Priority prices, with no override configured; re-pricing keeps them', async () => {
    const model = 'gpt-5-2025-08-07'
    answer(upstream, response(model, 10_000, 4_000, 2_000, 'priority'))
    const row = await recorded(t, () => postJson(`${t.url}/v1/responses`, { model: 'gpt-5', service_tier: 'priority', input: 'hi' }, OPENAI))
    expect(row).toMatchObject({ provider: 'openai', model, input_tokens: 10_000, cache_read_tokens: 4_000, output_tokens: 2_000, priced: 1 })
    expect(JSON.parse(row.usage_extra)).toMatchObject({ fast: true })
    const priority = (6_000 * 2.5 + 4_000 * 0.25 + 2_000 * 20) / 1e6
    expect(row.cost_usd).toBeCloseTo(priority, 15)
    // Twice the Standard list price the price data has for the model.
    expect(row.cost_usd).toBeCloseTo(2 * libraryPrice('openai', { input_tokens: 10_000, cache_read_tokens: 4_000, output_tokens: 2_000 }, model, row.ts), 15)

    expect((await admin(t.url, 'POST', `/prices/openai/${model}/reprice?all=true`)).status).toBe(200)
    expect(rows(t).find((r) => r.id === row.id).cost_usd).toBeCloseTo(priority, 15)
  })

  it('the same model served at Standard (the answer says "default") stays at its list price', async () => {
    const model = 'gpt-5-2025-08-07'
    answer(upstream, response(model, 10_000, 0, 2_000, 'default'))
    const row = await recorded(t, () => postJson(`${t.url}/v1/responses`, { model: 'gpt-5', service_tier: 'priority', input: 'hi' }, OPENAI))
    expect(row.usage_extra ?? '{}').not.toContain('fast')
    expect(row.cost_usd).toBe(libraryPrice('openai', { input_tokens: 10_000, output_tokens: 2_000 }, model, row.ts))
  })

  it('Chat Completions on gpt-4.1-mini and o4-mini, by their snapshot names, at their own Priority prices', async () => {
    for (const [model, [input, cached, output]] of [
      ['gpt-4.1-mini-2025-04-14', [0.7, 0.175, 2.8]],
      ['o4-mini-2025-04-16', [2, 0.5, 8]],
    ] as const) {
      answer(upstream, { id: 'chatcmpl-p', object: 'chat.completion', model, service_tier: 'priority', choices: [], usage: { prompt_tokens: 5_000, completion_tokens: 700, prompt_tokens_details: { cached_tokens: 1_000 } } })
      const row = await recorded(t, () => postJson(`${t.url}/v1/chat/completions`, { model, service_tier: 'priority', messages: [] }, OPENAI))
      expect(row).toMatchObject({ model, input_tokens: 5_000, cache_read_tokens: 1_000, output_tokens: 700, priced: 1 })
      expect(row.cost_usd, model).toBeCloseTo((4_000 * input + 1_000 * cached + 700 * output) / 1e6, 15)
    }
  })

  it("a user's speed: fast override still wins over the published Priority price", async () => {
    answer(upstream, response('gpt-4.1-2025-04-14', 1_000, 0, 100, 'priority'))
    const row = await recorded(t, () => postJson(`${t.url}/v1/responses`, { model: 'gpt-4.1', service_tier: 'priority', input: 'hi' }, OPENAI))
    expect(row.cost_usd).toBeCloseTo((1_000 * 9 + 100 * 90) / 1e6, 15)
  })

  it('a model with no published Priority price is recorded at its standard price, and the log says so once', async () => {
    const model = 'gpt-5-nano-2025-08-07'
    for (let i = 0; i < 2; i++) {
      answer(upstream, response(model, 3_000, 0, 500, 'priority'))
      const row = await recorded(t, () => postJson(`${t.url}/v1/responses`, { model: 'gpt-5-nano', service_tier: 'priority', input: 'hi' }, OPENAI))
      expect(JSON.parse(row.usage_extra)).toMatchObject({ fast: true })
      expect(row.cost_usd).toBe(libraryPrice('openai', { input_tokens: 3_000, output_tokens: 500 }, model, row.ts))
    }
    const said = warnings.filter((w) => w.includes(model))
    expect(said).toHaveLength(1)
    expect(said[0]).toContain('less than billed')
    // gpt-5 has a Priority price: nothing was said about it.
    expect(warnings.filter((w) => w.includes('gpt-5-2025-08-07'))).toEqual([])
  })

  it('a block rule reserves a request for Priority at the Priority price: refused before it goes upstream where Standard passes', async () => {
    const t2 = await startTestServer(
      { budgets: { rules: [{ api_key_pattern: 'sk-proj-priority-budget-*', daily_limit_usd: 0.015, action: 'block', reserve: 'max_tokens' }] } },
      upstream.url,
    )
    try {
      const key = { authorization: 'Bearer sk-proj-priority-budget-0000000001' }
      // Worst case of 1,000 output tokens (and a prompt of a few dozen): about $0.010 at gpt-5's Standard $10, $0.020 at its Priority $20.
      const body = { model: 'gpt-5', max_output_tokens: 1_000, input: 'hi' }
      answer(upstream, response('gpt-5-2025-08-07', 10, 0, 10, 'default'))
      const before = upstream.requests.length
      expect((await postJson(`${t2.url}/v1/responses`, body, key)).status).toBe(200)
      const refused = await postJson(`${t2.url}/v1/responses`, { ...body, service_tier: 'priority' }, key)
      expect(refused.status).toBe(429)
      expect(refused.json().error.type).toBe('budget_exceeded')
      expect(upstream.requests.length).toBe(before + 1)
    } finally {
      await t2.cleanup()
    }
  })
})
