import { calcPrice } from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Reply, eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { spentToday } from './support'

/**
 * A Responses turn that continues a stored conversation (`previous_response_id`: the Agents SDK,
 * Codex's later turns) sends only what is new and is billed for the whole conversation. Reserved
 * for its body alone (a few cents), twelve such turns in flight at once (parallel sub-agents) took a
 * $1 rule to $1.37. A turn continuing a response Burnrate saw answered reserves that response's
 * prompt and output as well: the rule holds.
 */
const LIMIT = 1
// Each answer: a 200k-token prompt, 150k of it cached, and 1,000 output tokens (gpt-5).
const INPUT = 200_000
const CACHED = 150_000
const OUTPUT = 1_000
const TURN_COST = calcPrice({ input_tokens: INPUT, cache_read_tokens: CACHED, output_tokens: OUTPUT }, 'gpt-5-2025-08-07', { providerId: 'openai' })!.total_price
const BURST = 12

let upstream: MockUpstream
let t: TestServer
/** While set, answers wait for it (the burst's turns are all in flight together). */
let hold: Promise<void> | null = null

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer(
    {
      timezone: 'UTC',
      budgets: {
        rules: [
          { api_key_pattern: 'sk-conv-exp-*', daily_limit_usd: LIMIT, action: 'block' },
          { api_key_pattern: 'sk-conv-max-*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' },
        ],
      },
    },
    upstream.url,
  )
  let n = 0
  upstream.setResponder(async () => {
    if (hold) await hold
    return {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        id: `resp_turn${++n}`, object: 'response', created_at: 1, status: 'completed', model: 'gpt-5-2025-08-07',
        output: [{ id: `msg_${n}`, type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'ok', annotations: [] }] }],
        usage: { input_tokens: INPUT, input_tokens_details: { cached_tokens: CACHED }, output_tokens: OUTPUT, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: INPUT + OUTPUT },
      }),
    }
  })
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

const turn = (key: string, previous?: string): Promise<Reply> =>
  postJson(
    `${t.url}/v1/responses`,
    { model: 'gpt-5', input: 'go on', max_output_tokens: 2000, ...(previous ? { previous_response_id: previous } : {}) },
    { authorization: `Bearer ${key}` },
  )

/** Three turns chained by previous_response_id, one after another; the last answer's id. */
async function conversation(key: string): Promise<string> {
  let previous: string | undefined
  for (let i = 0; i < 3; i++) {
    const r = await turn(key, previous)
    expect(r.status, r.text).toBe(200)
    previous = r.json().id as string
  }
  return previous!
}

/** BURST turns continuing `previous` at once, all in flight until each is answered or refused. */
async function burst(key: string, previous: string): Promise<{ ok: number; refused: Reply[] }> {
  let release!: () => void
  hold = new Promise<void>((r) => (release = r))
  const before = upstream.requests.length
  let refusedSoFar = 0
  const replies = Array.from({ length: BURST }, () =>
    turn(key, previous).then((r) => {
      if (r.status !== 200) refusedSoFar++
      return r
    }),
  )
  await eventually(() => upstream.requests.length - before + refusedSoFar === BURST, 20_000)
  release()
  hold = null
  const done = await Promise.all(replies)
  const refused = done.filter((r) => r.status !== 200)
  for (const r of refused) expect(r.json().error.type, r.text).toBe('budget_exceeded')
  return { ok: BURST - refused.length, refused }
}

describe('turns continuing a stored conversation, in flight at once, against a block rule', () => {
  it('reserve: expected: each reserves the conversation it continues, so the rule holds within one call', async () => {
    const key = 'sk-conv-exp-aaaaaaaaaaaa-0001'
    const last = await conversation(key)
    expect(spentToday(t, key)).toBeCloseTo(3 * TURN_COST, 12)
    // All of them admitted, the key would spend $1.37 of its $1.
    expect(3 * TURN_COST + BURST * TURN_COST).toBeGreaterThan(LIMIT + TURN_COST)
    const { ok, refused } = await burst(key, last)
    expect(refused.length).toBeGreaterThan(0)
    expect(ok).toBeGreaterThan(0)
    const spent = spentToday(t, key)
    expect(spent).toBeCloseTo((3 + ok) * TURN_COST, 12)
    expect(spent).toBeLessThan(LIMIT + TURN_COST)
  })

  it('reserve: max_tokens: the conversation counts as uncached input, so the limit holds exactly', async () => {
    const key = 'sk-conv-max-bbbbbbbbbbbb-0002'
    const last = await conversation(key)
    const { ok, refused } = await burst(key, last)
    expect(refused.length).toBeGreaterThan(0)
    expect(refused[0].json().error.message).toMatch(/could cost up to/)
    const spent = spentToday(t, key)
    expect(spent).toBeCloseTo((3 + ok) * TURN_COST, 12)
    expect(spent).toBeLessThanOrEqual(LIMIT)
  })

  it('a turn continuing a response Burnrate did not see reserves its body alone, as before', async () => {
    const key = 'sk-conv-max-cccccccccccc-0003'
    // The body's worst case fits in the limit, whatever the conversation behind an unknown id.
    const r = await turn(key, 'resp_never_seen_here')
    expect(r.status, r.text).toBe(200)
  })
})
