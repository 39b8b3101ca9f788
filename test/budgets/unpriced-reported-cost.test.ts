import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { callsOf } from './support'

/**
 * A model the price data does not have (OpenRouter lists hundreds; new ones every week) is still
 * recorded at what the provider reports it charged (`usage.cost`). `reserve: expected` priced its
 * tokens at 0 and learnt nothing beyond them from that charge, so every call of the model reserved
 * $0: a block rule let any number of them through at once, whatever they had been seen to cost.
 * The whole reported charge is now learnt as the call's charge beyond its (unpriced) tokens.
 */
const MODEL = 'acme-labs/frontier-x-2099'
const COST = 0.01
const LIMIT = 0.035
const N = 32

let upstream: MockUpstream
let t: TestServer
/** Set while a burst's calls are held at the provider until all of them have reached it or been refused. */
let held: Promise<void> | null = null

const answer = JSON.stringify({
  id: 'chatcmpl-unpriced',
  object: 'chat.completion',
  created: 1764950000,
  model: MODEL,
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 30, completion_tokens: 500, total_tokens: 530, cost: COST },
})

beforeAll(async () => {
  upstream = await startMockUpstream(async () => {
    if (held) await held
    return { status: 200, headers: { 'content-type': 'application/json' }, body: answer }
  })
  t = await startTestServer({ timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-or-v1-block-*', daily_limit_usd: LIMIT, action: 'block' }] } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

const call = (key: string) =>
  postJson(`${t.url}/openrouter/v1/chat/completions`, { model: MODEL, messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${key}` })

describe('reserve: expected, a model with no price whose provider reports its charge', () => {
  it(`${N} calls at once pass a $${LIMIT} block rule by less than one call once the model's charges have been seen`, async () => {
    // Another key's calls teach what the model's calls cost (no rule of theirs).
    const learner = 'sk-or-v1-learner-aaaaaaaa-0001'
    for (let i = 0; i < 6; i++) expect((await call(learner)).status).toBe(200)
    expect(callsOf(t, learner).map((c) => c.cost_usd)).toEqual(Array(6).fill(COST))

    const key = 'sk-or-v1-block-aaaaaaaa-0001'
    let release!: () => void
    held = new Promise<void>((r) => (release = r))
    const before = upstream.requests.length
    let answered = 0
    const all = Promise.all(Array.from({ length: N }, () => call(key).then((r) => (answered++, r))))
    // Every admitted call waits at the provider until each of the N has been admitted or refused.
    await eventually(() => upstream.requests.length - before + answered === N, 20_000)
    release()
    held = null
    const replies = await all
    await eventually(() => expect(callsOf(t, key)).toHaveLength(N), 20_000)
    const ok = replies.filter((r) => r.status === 200).length
    const spent = callsOf(t, key).reduce((s, c) => s + c.cost_usd, 0)
    expect(ok).toBeGreaterThan(0)
    // Builds before this one: all 32 admitted, $0.32 on a $0.035 rule.
    expect(spent).toBeLessThan(LIMIT + COST)
  })
})
