import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { calcPrice } from '@pydantic/genai-prices'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, type RecordedRequest, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { callsOf } from './support'

/**
 * A provider that reports what it charged for every call (OpenRouter's `usage.cost`, Perplexity's
 * `usage.cost.total_cost`) has that recorded as the call's whole cost. What `reserve: expected`
 * learns from such a call beyond its tokens is only the per-use charges its usage names (Sonar
 * Deep Research's searches), never the gap between the reported cost and the tokens' list price:
 * that gap (OpenRouter routing to a pricier upstream) grows with the call's tokens, and learnt from
 * large calls it was added as a flat amount to every small call of the model.
 */

const OR_MODEL = 'openai/gpt-4o'
const OUTPUT = 2000
const SMALL = { model: OR_MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: OUTPUT }
/** A large prompt (80 KB, 20,000 tokens), answered by an upstream 1.5 times the list price. */
const LARGE = { ...SMALL, messages: [{ role: 'user', content: 'LARGE ' + 'x'.repeat(80_000) }] }
const orList = (input: number) => calcPrice({ input_tokens: input, output_tokens: OUTPUT }, OR_MODEL, { providerId: 'openrouter' })!.total_price

/** Sonar Deep Research: 20 searches at $5 per 1,000 beside its tokens, all in its reported cost. */
const DR_USAGE = { prompt_tokens: 10, completion_tokens: 500, citation_tokens: 1000, reasoning_tokens: 2000, num_search_queries: 20 }
const DR_TOKENS = (10 * 2 + 500 * 8 + 1000 * 2 + 2000 * 3) / 1e6
const DR_COST = DR_TOKENS + 20 * 0.005
const DR = { model: 'sonar-deep-research', messages: [{ role: 'user', content: 'Research otters.' }] }

const OR_LIMIT = 0.11
const DR_LIMIT = 0.5

let upstream: MockUpstream
let t: TestServer

function completion(model: string, usage: Record<string, unknown>) {
  return { id: 'chatcmpl-' + Math.random().toString(36).slice(2), object: 'chat.completion', created: 1764950000, model, choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage }
}

function respond(req: RecordedRequest) {
  const text = req.body.toString('utf8')
  let body: unknown
  if (text.includes('sonar-deep-research')) body = completion('sonar-deep-research', { ...DR_USAGE, total_tokens: 510, cost: { total_cost: DR_COST } })
  else if (text.includes('LARGE')) body = completion(OR_MODEL, { prompt_tokens: 20_000, completion_tokens: OUTPUT, total_tokens: 20_000 + OUTPUT, cost: 1.5 * orList(20_000) })
  else body = completion(OR_MODEL, { prompt_tokens: 30, completion_tokens: OUTPUT, total_tokens: 30 + OUTPUT, cost: orList(30) })
  return { status: 200, headers: { 'content-type': 'application/json' }, headerDelayMs: 300, body: JSON.stringify(body) }
}

beforeAll(async () => {
  upstream = await startMockUpstream(respond)
  t = await startTestServer(
    {
      timezone: 'UTC',
      budgets: {
        rules: [
          { api_key_pattern: 'sk-or-v1-block-*', daily_limit_usd: OR_LIMIT, action: 'block' },
          { api_key_pattern: 'pplx-block-*', daily_limit_usd: DR_LIMIT, action: 'block' },
        ],
      },
    },
    upstream.url,
  )
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

const openrouter = (key: string, body: Record<string, unknown>) => postJson(`${t.url}/openrouter/v1/chat/completions`, body, { authorization: `Bearer ${key}` })
const perplexity = (key: string) => postJson(`${t.url}/perplexity/v1/chat/completions`, DR, { authorization: `Bearer ${key}` })

async function serial(n: number, call: () => Promise<{ status: number }>): Promise<void> {
  for (let i = 0; i < n; i++) expect((await call()).status).toBe(200)
}

/** 20 calls of `key` at once; how many were admitted. */
async function burst(key: string, call: () => Promise<{ status: number }>): Promise<number> {
  const replies = await Promise.all(Array.from({ length: 20 }, call))
  await eventually(() => expect(callsOf(t, key)).toHaveLength(20), 20_000)
  return replies.filter((r) => r.status === 200).length
}

describe('reserve: expected, a provider that reports its cost', () => {
  it("OpenRouter: large calls' cost above the list price is not reserved for every small call of the model", async () => {
    const learner = 'sk-or-v1-learner-aaaaaaaa-0001'
    await serial(5, () => openrouter(learner, SMALL))
    const before = await burst('sk-or-v1-block-aaaaaaaa-0001', () => openrouter('sk-or-v1-block-aaaaaaaa-0001', SMALL))
    // Five large calls routed to a pricier upstream: each reported 50% above its tokens' list price.
    await serial(5, () => openrouter(learner, LARGE))
    const costs = callsOf(t, learner).map((c) => c.cost_usd)
    expect(costs[9]).toBeCloseTo(1.5 * orList(20_000), 12)
    const after = await burst('sk-or-v1-block-aaaaaaaa-0002', () => openrouter('sk-or-v1-block-aaaaaaaa-0002', SMALL))
    expect(before).toBeGreaterThan(3)
    expect(after).toBe(before)
  })

  it("Sonar Deep Research: its searches, in the cost it reports, are still learnt: 20 calls at once pass the limit by less than one call", async () => {
    await serial(5, () => perplexity('pplx-learner-aaaaaaaa-0001'))
    expect(callsOf(t, 'pplx-learner-aaaaaaaa-0001')[0].cost_usd).toBeCloseTo(DR_COST, 15)
    const key = 'pplx-block-aaaaaaaa-0001'
    const ok = await burst(key, () => perplexity(key))
    const spent = callsOf(t, key).reduce((s, c) => s + c.cost_usd, 0)
    expect(ok).toBeGreaterThan(0)
    expect(spent).toBeLessThan(DR_LIMIT + DR_COST)
  })
})
