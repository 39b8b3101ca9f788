import { calcPrice } from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { fixture } from '../support/fixtures'
import { NANO_COST, NANO_FIXTURE, callsOf, chat, replayJson, spentToday } from './support'

const LIMIT = NANO_COST * 5

/** The worst case the proxy reserves for one `chat()` call: body bytes / 3 as input, max tokens as output. */
function worstCase(maxTokens: number): number {
  const body = JSON.stringify({ model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: maxTokens })
  return calcPrice({ input_tokens: Math.ceil(Buffer.byteLength(body) / 3), output_tokens: maxTokens }, 'gpt-5-nano', { providerId: 'openai' })!.total_price
}

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer(
    {
      budgets: {
        rules: [
          { api_key_pattern: 'sk-burst-*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' },
          { api_key_pattern: 'sk-expect-*', daily_limit_usd: LIMIT, action: 'block' },
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

async function burst(key: string, maxTokens: number, n = 50, periodIn: (p: string) => boolean = () => true) {
  // Every admitted call waits at the provider until each of the n has been admitted (reached it)
  // or refused, so all the admitted ones are in flight together however slowly the machine sends
  // them (a fixed delay let the first answers end, and free their reservations, on a loaded one).
  const body = fixture(NANO_FIXTURE)
  let release!: () => void
  const held = new Promise<void>((r) => (release = r))
  upstream.setResponder(async () => {
    await held
    return { status: 200, headers: { 'content-type': 'application/json' }, body }
  })
  const before = upstream.requests.length
  let answered = 0
  const all = Promise.all(
    Array.from({ length: n }, () =>
      chat(t, key, { max_completion_tokens: maxTokens }).then((r) => {
        answered++
        return r
      }),
    ),
  )
  await eventually(() => upstream.requests.length - before + answered === n, 20_000)
  release()
  const replies = await all
  // A generous limit: 50 calls through a busy 2-core machine.
  await eventually(() => callsOf(t, key).length === n, 20_000)
  const ok = replies.filter((r) => r.status === 200).length
  const refused = replies.filter((r) => r.status === 429)
  expect(ok + refused.length).toBe(n)
  expect(upstream.requests.length - before).toBe(ok)
  for (const r of refused) {
    // Refused for the calls in flight alone (spend under the limit): to retry in a few seconds,
    // when they may have ended; a limit reached: not before it resets.
    const e = r.json().error
    const inFlight = e.spent_usd < e.limit_usd
    expect(r.headers['x-should-retry']).toBe(inFlight ? 'true' : 'false')
    if (inFlight) expect(r.headers['retry-after']).toBe('5')
    expect(r.json().error.type).toBe('budget_exceeded')
    expect(periodIn(r.json().error.period)).toBe(true)
  }
  return { ok, refused }
}

describe('50 concurrent calls from one key against a small daily limit (reserve: max_tokens)', () => {
  it('never overshoot when each call states a max_tokens that covers its cost', async () => {
    const key = 'sk-burst-covered-aaaaaaaa-0001'
    // 300 max tokens of gpt-5-nano output covers the 228 the provider bills.
    const { ok, refused } = await burst(key, 300)
    expect(worstCase(300)).toBeGreaterThan(NANO_COST)
    expect(ok).toBeGreaterThan(0)
    expect(ok).toBeLessThanOrEqual(Math.floor(LIMIT / worstCase(300)))
    expect(refused.length).toBeGreaterThan(0)
    expect(refused[0].json().error.message).toMatch(/could cost up to/)
    const spent = spentToday(t, key)
    expect(spent).toBeCloseTo(ok * NANO_COST, 15)
    expect(spent).toBeLessThanOrEqual(LIMIT)

    // Calls one after another fill what is left, and the limit still holds.
    replayJson(upstream, NANO_FIXTURE)
    for (let i = 0; i < 10; i++) await chat(t, key, { max_completion_tokens: 300 })
    expect(spentToday(t, key)).toBeLessThanOrEqual(LIMIT)
  })

  it('overshoot only by the calls in flight when the limit was reached, even when max_tokens understates the cost', async () => {
    const key = 'sk-burst-understated-bbbbb-0002'
    // 100 max tokens reserve less than the 228 billed: the reservation bounds how many get in.
    const { ok } = await burst(key, 100)
    const worst = worstCase(100)
    expect(worst).toBeLessThan(NANO_COST)
    const spent = spentToday(t, key)
    expect(ok).toBeGreaterThan(0)
    expect(ok).toBeLessThanOrEqual(Math.floor(LIMIT / worst))
    // Each call in flight can overshoot only by what its real cost exceeded its reservation.
    expect(spent).toBeGreaterThan(LIMIT)
    expect(spent - LIMIT).toBeLessThanOrEqual(ok * (NANO_COST - worst) + 1e-12)
    // Once the spend is over the limit every further call is refused as "reached".
    const after = await chat(t, key, { max_completion_tokens: 1 })
    expect(after.status).toBe(429)
    expect(after.json().error.spent_usd).toBeCloseTo(spent, 15)
  })
})

describe('50 concurrent calls under the default expected-cost reservation', () => {
  it('overshoot by less than one call: calls are admitted while spend plus what is in flight is under the limit', async () => {
    const key = 'sk-expect-aaaaaaaaaaaa-0003'
    // A max_tokens far above what such calls produce: the worst case ($0.0041) is over the whole limit.
    expect(worstCase(10_000)).toBeGreaterThan(LIMIT)
    const { ok, refused } = await burst(key, 10_000)
    expect(ok).toBeGreaterThan(0)
    expect(refused.length).toBeGreaterThan(0)
    expect(refused[0].json().error.message).toMatch(/in flight/)
    const spent = spentToday(t, key)
    expect(spent).toBeCloseTo(ok * NANO_COST, 15)
    expect(spent).toBeLessThan(LIMIT + NANO_COST)

    // One after another, calls go through until the committed spend reaches the limit, then every one is refused.
    replayJson(upstream, NANO_FIXTURE)
    let statuses: number[] = []
    for (let i = 0; i < 10; i++) statuses.push((await chat(t, key, { max_completion_tokens: 10_000 })).status)
    statuses = statuses.filter((s, i) => i === 0 || s !== statuses[i - 1])
    expect(statuses.at(-1)).toBe(429)
    expect(spentToday(t, key)).toBeLessThan(LIMIT + NANO_COST)
  })
})
