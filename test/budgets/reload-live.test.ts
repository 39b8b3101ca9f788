import { calcPrice } from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { NANO_FIXTURE, chat, replayJson } from './support'

/**
 * A rule change re-reads the meters from the ledger (every rule's, whichever rule changed). What
 * the ledger does not hold yet stays counted across it: the reservations of the calls in flight,
 * and the requests of the last minute. Before, both started again from nothing, so a change to any
 * rule let a key's calls past its block limit by what it had in flight, and past its per-minute
 * limit by a minute's worth.
 */

const MAX_TOKENS = 300
/** The worst case the proxy reserves for one `chat()` call: body bytes / 3 as input, max tokens as output. */
const WORST = (() => {
  const body = JSON.stringify({ model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: MAX_TOKENS })
  return calcPrice({ input_tokens: Math.ceil(Buffer.byteLength(body) / 3), output_tokens: MAX_TOKENS }, 'gpt-5-nano', { providerId: 'openai' })!.total_price
})()

let upstream: MockUpstream
let t: TestServer
let changes = 0

/** Any rule added (one no call here matches): the engine reloads every meter. */
async function changeRules(): Promise<void> {
  const r = await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: `sk-unrelated-${++changes}-*`, daily_limit_usd: 5, action: 'warn' } })
  expect(r.status).toBeLessThan(300)
}

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer(
    {
      ...ADMIN_CONFIG,
      budgets: {
        rules: [
          // Room for one call's worst case, not two.
          { api_key_pattern: 'sk-flight-*', daily_limit_usd: WORST * 1.5, action: 'block', reserve: 'max_tokens' },
          { api_key_pattern: 'sk-rpm-*', requests_per_minute: 3, action: 'block' },
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

describe('a rule change while calls are in flight', () => {
  it("keeps their reservations: a block limit's room is still taken by them", async () => {
    const key = 'sk-flight-aaaaaaaa-0001'
    replayJson(upstream, NANO_FIXTURE, { headerDelayMs: 2000 })
    const sent = upstream.requests.length
    const first = chat(t, key, { max_completion_tokens: MAX_TOKENS })
    await eventually(() => upstream.requests.length === sent + 1)
    await changeRules()
    const second = await chat(t, key, { max_completion_tokens: MAX_TOKENS })
    expect(second.status).toBe(429)
    expect(second.json().error).toMatchObject({ type: 'budget_exceeded', period: 'daily' })
    expect(second.json().error.message).toMatch(/could cost up to/)
    expect(upstream.requests.length).toBe(sent + 1)
    expect((await first).status).toBe(200)
    // Settled on the meter that replaced the one it was admitted on: nothing is left reserved.
    const meter = budgetsOf(t.server.context).engine.status().flatMap((r) => r.keys).find((k) => k.key.hash === hashKey(key))!.meter
    expect({ inFlight: meter.inFlight, reservedUsd: meter.reservedUsd }).toEqual({ inFlight: 0, reservedUsd: 0 })
  })

  it("keeps them when the rule's scope changes under the same pattern: the edited rule still counts the calls it admitted", async () => {
    const key = 'sk-scoped-cccccccc-0003'
    const put = (body: Record<string, unknown>) => admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-scoped-*', daily_limit_usd: WORST * 1.5, action: 'block', reserve: 'max_tokens', ...body } })
    expect((await put({ model_pattern: 'gpt-5-nano*' })).status).toBeLessThan(300)
    replayJson(upstream, NANO_FIXTURE, { headerDelayMs: 2000 })
    const sent = upstream.requests.length
    const first = chat(t, key, { max_completion_tokens: MAX_TOKENS })
    await eventually(() => upstream.requests.length === sent + 1)
    // The same rule widened to every model: the call in flight is still one of its calls.
    expect((await put({ model_pattern: 'gpt-5*' })).status).toBeLessThan(300)
    const second = await chat(t, key, { max_completion_tokens: MAX_TOKENS })
    expect(second.status).toBe(429)
    expect(second.json().error).toMatchObject({ type: 'budget_exceeded', period: 'daily' })
    expect(upstream.requests.length).toBe(sent + 1)
    expect((await first).status).toBe(200)
    const meter = budgetsOf(t.server.context).engine.status().flatMap((r) => r.keys).find((k) => k.key.hash === hashKey(key))!.meter
    expect({ inFlight: meter.inFlight, reservedUsd: meter.reservedUsd }).toEqual({ inFlight: 0, reservedUsd: 0 })
  })

  it("keeps the last minute's requests: a per-minute limit still counts them", async () => {
    const key = 'sk-rpm-bbbbbbbb-0002'
    replayJson(upstream, NANO_FIXTURE)
    for (let i = 0; i < 3; i++) expect((await chat(t, key)).status).toBe(200)
    await changeRules()
    const r = await chat(t, key)
    expect(r.status).toBe(429)
    expect(r.json().error).toMatchObject({ type: 'rate_limited', unit: 'requests_per_minute', limit: 3, used: 3 })
  })
})
