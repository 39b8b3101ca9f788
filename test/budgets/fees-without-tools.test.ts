import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { callsOf } from './support'

/**
 * What a model's calls were charged beyond their tokens (here a web search, $0.01) is learnt from
 * the calls whose request names the web_search tool. A call of the same model that names no such
 * tool cannot be charged a search: learnt fees must not be added to its reservation, or one
 * agent's searching calls shrink what every other key's plain calls of the model may run at once.
 * Both kinds of call are answered with the same usage (8 input, 2,000 output tokens of gpt-5).
 */

const OUTPUT = 2000
const PLAIN = { model: 'gpt-5', input: 'hi', max_output_tokens: OUTPUT }
const SEARCH = { ...PLAIN, tools: [{ type: 'web_search' }] }
const LIMIT = 0.1

let upstream: MockUpstream
let t: TestServer

function answer(search: boolean, delay: number): { status: number; headers: Record<string, string>; headerDelayMs: number; body: string } {
  const output: unknown[] = []
  if (search) output.push({ type: 'web_search_call', id: 'ws_' + Math.random().toString(36).slice(2), status: 'completed', action: { type: 'search', query: 'q' } })
  return {
    status: 200,
    headers: { 'content-type': 'application/json' },
    headerDelayMs: delay,
    body: JSON.stringify({
      id: 'resp_' + Math.random().toString(36).slice(2),
      object: 'response',
      created_at: 1764950000,
      status: 'completed',
      model: 'gpt-5-2025-08-07',
      output,
      usage: { input_tokens: 8, input_tokens_details: { cached_tokens: 0 }, output_tokens: OUTPUT, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 8 + OUTPUT },
    }),
  }
}

beforeAll(async () => {
  upstream = await startMockUpstream((req) => answer(req.body.toString('utf8').includes('web_search'), 300))
  t = await startTestServer({ timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-plain-*', daily_limit_usd: LIMIT, action: 'block' }] } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

const call = (key: string, body: Record<string, unknown>) => postJson(`${t.url}/v1/responses`, body, { authorization: `Bearer ${key}` })

/** `n` answered calls of `key`, one after another. */
async function serial(key: string, body: Record<string, unknown>, n: number): Promise<void> {
  for (let i = 0; i < n; i++) expect((await call(key, body)).status).toBe(200)
}

/** 20 plain calls of `key` at once; how many were admitted. */
async function burst(key: string): Promise<number> {
  const replies = await Promise.all(Array.from({ length: 20 }, () => call(key, PLAIN)))
  await eventually(() => expect(callsOf(t, key)).toHaveLength(20), 20_000)
  return replies.filter((r) => r.status === 200).length
}

describe('reserve: expected, fees learnt from calls with a search tool', () => {
  it('are not reserved for calls of the model that name no tool', async () => {
    const learner = 'sk-learner-aaaaaaaa-0001'
    await serial(learner, PLAIN, 5)
    const before = await burst('sk-plain-aaaaaaaa-0001')
    // The searching calls: recorded with their search ($0.01 beyond the tokens).
    await serial(learner, SEARCH, 5)
    const costs = callsOf(t, learner).map((c) => c.cost_usd)
    expect(costs[9] - costs[0]).toBeCloseTo(0.01, 12)
    const after = await burst('sk-plain-aaaaaaaa-0002')
    expect(before).toBeGreaterThan(1)
    expect(after).toBe(before)
  })

  it('are reserved for calls that name the tool', async () => {
    const key = 'sk-plain-aaaaaaaa-0003'
    const replies = await Promise.all(Array.from({ length: 20 }, () => call(key, SEARCH)))
    await eventually(() => expect(callsOf(t, key)).toHaveLength(20), 20_000)
    const ok = replies.filter((r) => r.status === 200).length
    const each = callsOf(t, key).find((c) => c.status === 200)!.cost_usd
    // Each reserves its search as well as its tokens: the spend passes the limit by less than one call.
    expect(ok * each).toBeLessThan(LIMIT + each)
  })
})
