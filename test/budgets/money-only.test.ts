import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { getJson } from '../dashboard/seed'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { chatAnswer } from '../pricing/support'

// What a budget rule's meter counts is money: the calls' costs as the ledger holds them now.
// A re-priced call moves the meters with the calls; a plan's (subscription) call is not money.

const MODEL = 'gpt-6.1-sol' // unknown to the bundled prices: recorded unpriced, cost 0
const KEY = 'sk-test-reprice-aaaaaaaaaaaa'
const PLAN = 'sk-ant-oat01-plan-token-aaaaaaaaaaaaaaaa'

describe('budget meters count money as the ledger holds it', () => {
  let upstream: MockUpstream
  let t: TestServer

  beforeAll(async () => {
    upstream = await startMockUpstream((req) => {
      if (req.url.includes('/messages')) return { status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }
      return { status: 200, headers: { 'content-type': 'application/json' }, body: chatAnswer(MODEL, 1_000_000, 100_000) }
    })
    t = await startTestServer(
      {
        ...ADMIN_CONFIG,
        timezone: 'UTC',
        budgets: {
          rules: [
            // $5 a day: two re-priced calls ($4.20 each) are over it.
            { api_key_pattern: 'sk-test-*', daily_limit_usd: 5, action: 'block' },
            // Any other key, a tiny daily limit: a plan's calls must not reach it.
            { api_key_pattern: '*', daily_limit_usd: 0.000001, action: 'warn' },
          ],
        },
      },
      upstream.url,
    )
  })
  afterAll(async () => {
    await t?.cleanup()
    await upstream?.close()
  })

  const call = () => postJson(`${t.url}/v1/chat/completions`, { model: MODEL, messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${KEY}` })
  const windows = async (pattern: string, key: string) => {
    const body = (await getJson(`${t.url}/api/dashboard/budgets`)).body
    return body.rules.find((r: any) => r.rule.api_key_pattern === pattern && r.api_key_hash === hashKey(key))?.windows ?? null
  }

  it('a re-priced call counts in the budget at its new cost: the next call over the limit is refused', async () => {
    // Unpriced: recorded at $0, so the $5 rule admits both.
    expect((await call()).status).toBe(200)
    expect((await call()).status).toBe(200)
    await eventually(async () => (await windows('sk-test-*', KEY)) !== null)
    expect((await windows('sk-test-*', KEY))[0]).toMatchObject({ period: 'daily', spent_usd: 0 })

    expect((await admin(t.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 3, output_mtok: 12 } })).status).toBe(200)
    const rep = await admin(t.url, 'POST', `/prices/openai/${MODEL}/reprice`)
    expect(rep.json()).toMatchObject({ repriced: 2, unpriced: 0 })

    const daily = (await windows('sk-test-*', KEY))[0]
    expect(daily.period).toBe('daily')
    expect(daily.spent_usd).toBeCloseTo(8.4, 12)
    const r = await call()
    expect(r.status).toBe(429)
    expect(r.json().error).toMatchObject({ type: 'budget_exceeded', period: 'daily', limit_usd: 5 })
    expect(r.json().error.spent_usd).toBeCloseTo(8.4, 12)
  })

  it('re-pricing to a lower price lowers the meters too', async () => {
    expect((await admin(t.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 1, output_mtok: 2 } })).status).toBe(200)
    const rep = await admin(t.url, 'POST', `/prices/openai/${MODEL}/reprice?all=true`)
    expect(rep.json()).toMatchObject({ repriced: 2 })
    // Two calls of 1M input at $1 + 100k output at $2: $1.20 each.
    const daily = (await windows('sk-test-*', KEY))[0]
    expect(daily.spent_usd).toBeCloseTo(2.4, 12)
    const r = await call()
    expect(r.status).toBe(200)
  })

  it("a plan's (subscription) call adds nothing to a money rule's meter", async () => {
    const r = await postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, {
      authorization: `Bearer ${PLAN}`,
      'anthropic-version': '2023-06-01',
    })
    expect(r.status).toBe(200)
    await eventually(async () => (await windows('*', PLAN)) !== null)
    const w = await windows('*', PLAN)
    expect(w[0]).toMatchObject({ period: 'daily', spent_usd: 0 })
    // Nor after the meters are read again from the ledger (a rule change reloads them).
    expect((await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-other-*', daily_limit_usd: 1, action: 'warn' } })).status).toBe(201)
    expect((await windows('*', PLAN))[0]).toMatchObject({ period: 'daily', spent_usd: 0 })
  })
})
