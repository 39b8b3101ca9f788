import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { callsOf } from './support'

/**
 * Claude's advisor tool (`advisor_20260301`): a Sonnet 4.6 call that consults Opus 4.6 is billed
 * its own tokens at Sonnet's rates and the consultation (an `advisor_message` iteration naming
 * the advisor model, as in test/providers/anthropic-advisor.test.ts) at Opus's. A `block` rule's
 * default `expected` reservation must count the advice, or a runaway agent's calls in flight
 * together pass the limit by many calls (README, *Calls in flight*: by less than one call while
 * each costs no more than its expected cost). Through the real proxy and SQLite ledger.
 *
 * Each answer: the executor's 4,000 input and 300 output tokens ($0.012 + $0.0045 at Sonnet's $3 /
 * $15), the advisor's 2,100 input and 1,600 output tokens ($0.0105 + $0.04 at Opus's $5 / $25):
 * $0.067, three quarters of it the advice.
 */

const EXECUTOR = 'claude-sonnet-4-6'
const ADVISOR = 'claude-opus-4-6'
const EACH = (4_000 * 3 + 300 * 15 + 2_100 * 5 + 1_600 * 25) / 1e6
const LIMIT = 0.5
const cache = { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 }
const ITERATIONS = [
  { type: 'message', input_tokens: 2_000, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, cache_creation: cache, output_tokens: 100 },
  { type: 'advisor_message', model: ADVISOR, input_tokens: 2_100, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, cache_creation: cache, output_tokens: 1_600 },
  { type: 'message', input_tokens: 2_000, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, cache_creation: cache, output_tokens: 200 },
]
const TOP = { input_tokens: 4_000, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, cache_creation: cache, output_tokens: 300 }

/** The transcript the executor and the advisor read: about 8 KB of body. */
const PROMPT = 'Refactor the billing module so that every charge is priced once. '.repeat(125)
const ADVISOR_TOOL = { type: 'advisor_20260301', name: 'advisor', model: ADVISOR }
const body = (tools: unknown[]) => ({ model: EXECUTOR, max_tokens: 4_000, tools, messages: [{ role: 'user', content: PROMPT }] })

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream((req) => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    headerDelayMs: 300,
    body: JSON.stringify({
      id: 'msg_' + Math.random().toString(36).slice(2),
      type: 'message',
      role: 'assistant',
      model: JSON.parse(req.body.toString('utf8')).model,
      content: [{ type: 'text', text: 'Done, as advised.' }],
      stop_reason: 'end_turn',
      usage: { ...TOP, iterations: ITERATIONS },
    }),
  }))
  const rules = [
    { api_key_pattern: 'sk-ant-advised-*', daily_limit_usd: LIMIT, action: 'block' },
    { api_key_pattern: 'sk-ant-strict-*', daily_limit_usd: STRICT_LIMIT, action: 'block', reserve: 'max_tokens' },
  ]
  t = await startTestServer({ timezone: 'UTC', budgets: { rules } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

const call = (key: string, tools: unknown[] = [ADVISOR_TOOL], model = EXECUTOR) => postJson(`${t.url}/v1/messages`, { ...body(tools), model }, { 'x-api-key': key })

/** Five answered calls of the model under no rule (the history's minimum), one after another. */
async function learn(key: string): Promise<void> {
  for (let i = 0; i < 5; i++) expect((await call(key)).status).toBe(200)
  const costs = await eventually(() => {
    const c = callsOf(t, key)
    expect(c).toHaveLength(5)
    return c.map((r) => r.cost_usd)
  })
  for (const c of costs) expect(c).toBeCloseTo(EACH, 12)
}

/** 20 calls of `key` at once; how many were admitted. */
async function burst(key: string, tools: unknown[] = [ADVISOR_TOOL], model = EXECUTOR): Promise<number> {
  const replies = await Promise.all(Array.from({ length: 20 }, () => call(key, tools, model)))
  await eventually(() => expect(callsOf(t, key)).toHaveLength(20), 20_000)
  const ok = replies.filter((r) => r.status === 200).length
  expect(ok).toBeGreaterThan(0)
  expect(replies.filter((r) => r.status === 429).length).toBe(20 - ok)
  return ok
}

describe("expected reservations count the advisor's charge (Sonnet 4.6 advised by Opus 4.6), 20 calls at once", () => {
  it('the spend passes the limit by less than one call', async () => {
    await learn('sk-ant-learn-advisor-aaaaaaaa-0001')
    const key = 'sk-ant-advised-aaaaaaaa-0001'
    const ok = await burst(key)
    const spent = callsOf(t, key).reduce((s, c) => s + c.cost_usd, 0)
    expect(spent).toBeCloseTo(ok * EACH, 12)
    expect(spent).toBeLessThan(LIMIT + EACH)
  })
})

/**
 * `reserve: max_tokens` reserves the most a call can cost (README: the limit holds exactly unless a
 * provider bills more than that bound). With the advisor tool that is the executor's bound plus the
 * advisor's: a request that caps the advice (the tool's `max_uses` and `max_tokens`) reserves, for
 * each use, the transcript the advisor may read (the prompt's bound, the executor's output cap and the
 * earlier advice) and its output cap, at the advisor model's price. Haiku 4.5 advised by Opus 4.6:
 * Haiku's $1 / $5 bound of $0.0228 is less than half the $0.056 each answer costs.
 */
const HAIKU = 'claude-haiku-4-5-20251001'
const HAIKU_EACH = (4_000 * 1 + 300 * 5 + 2_100 * 5 + 1_600 * 25) / 1e6
const STRICT_LIMIT = 0.3
const CAPPED_ADVISOR = { ...ADVISOR_TOOL, max_uses: 1, max_tokens: 2_048 }

describe('a reserve: max_tokens rule reserves the advice a request caps, 20 calls at once', () => {
  it('the spend stays within the limit', async () => {
    const key = 'sk-ant-strict-aaaaaaaa-0001'
    const ok = await burst(key, [CAPPED_ADVISOR], HAIKU)
    const spent = callsOf(t, key).reduce((s, c) => s + c.cost_usd, 0)
    expect(spent).toBeCloseTo(ok * HAIKU_EACH, 12)
    expect(spent).toBeLessThanOrEqual(STRICT_LIMIT)
  })
})
