import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { NANO_COST, NANO_FIXTURE, callsOf, chat, replayJson } from './support'

/** Windows, scopes and rate limits through the real proxy, the admin API and a restart. */

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
  t = await startTestServer(
    {
      ...ADMIN_CONFIG,
      budgets: {
        week_start: 'sunday',
        rules: [
          { api_key_pattern: 'sk-rpm-*', requests_per_minute: 2, action: 'block' },
          { api_key_pattern: 'sk-sess-*', session_limit_usd: NANO_COST * 0.5, action: 'block' },
          { api_key_pattern: 'sk-scope-*', model_pattern: 'gpt-5-nano*', agent: 'my-agent', daily_limit_usd: 0, action: 'block' },
          { api_key_pattern: 'sk-week-*', weekly_limit_usd: NANO_COST * 0.5, action: 'warn' },
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

describe('through the proxy', () => {
  it('requests_per_minute: the third call in a minute is a transient 429 rate_limited', async () => {
    const key = 'sk-rpm-aaaaaaaaaaaa-0001'
    expect((await chat(t, key)).status).toBe(200)
    expect((await chat(t, key)).status).toBe(200)
    const before = upstream.requests.length
    const r = await chat(t, key)
    expect(r.status).toBe(429)
    expect(upstream.requests.length).toBe(before)
    expect(r.headers['x-should-retry']).toBe('true')
    const retry = Number(r.headers['retry-after'])
    expect(retry).toBeGreaterThan(0)
    expect(retry).toBeLessThanOrEqual(60)
    expect(r.json().error).toMatchObject({ type: 'rate_limited', period: 'rate', api_key_pattern: 'sk-rpm-*', limit: 2, used: 2, unit: 'requests_per_minute' })
    await eventually(() => callsOf(t, key).length === 3)
    expect(callsOf(t, key).at(-1)).toMatchObject({ status: 429, cost_usd: 0, error: 'rate_limited' })
    // The refusal never reached the provider: not a provider error.
    const openai = (await admin(t.url, 'GET', '/providers')).json().find((p: any) => p.name === 'openai')
    expect(openai).toMatchObject({ requests_today: 2, errors_today: 0, last_status: 200 })
  })

  it('session_limit_usd: a session that spent its cap is refused; another session of the same key is not', async () => {
    const key = 'sk-sess-aaaaaaaaaaaa-0001'
    expect((await chat(t, key, {}, { 'x-burnrate-session': 'one' })).status).toBe(200)
    await eventually(() => callsOf(t, key).length === 1)
    const r = await chat(t, key, {}, { 'x-burnrate-session': 'one' })
    expect(r.status).toBe(429)
    expect(r.headers['retry-after']).toBeUndefined()
    expect(r.json().error).toMatchObject({ type: 'budget_exceeded', period: 'session', resets_at: null, spent_usd: NANO_COST })
    expect(r.json().error.message).toContain('Session "one"')
    expect((await chat(t, key, {}, { 'x-burnrate-session': 'two' })).status).toBe(200)
  })

  it('a scoped rule applies only to calls that match every pattern', async () => {
    const key = 'sk-scope-aaaaaaaaaaa-0001'
    expect((await chat(t, key, {}, { 'x-burnrate-agent': 'my-agent' })).status).toBe(429)
    expect((await chat(t, key, {}, { 'x-burnrate-agent': 'other-agent' })).status).toBe(200)
    expect((await chat(t, key, { model: 'gpt-4o-mini' }, { 'x-burnrate-agent': 'my-agent' })).status).toBe(200)
  })

  it('weekly limits warn with the period named', async () => {
    const key = 'sk-week-aaaaaaaaaaaa-0001'
    expect((await chat(t, key)).status).toBe(200)
    await eventually(() => callsOf(t, key).length === 1)
    const r = await chat(t, key)
    expect(r.status).toBe(200)
    expect(r.headers['x-burnrate-budget-warning']).toMatch(/^sk-week-\* weekly /)
  })
})

describe('runtime rules with the new fields', () => {
  it('round-trip through the admin API, are enforced at once, and load their spend from the database after a restart', async () => {
    const key = 'sk-win-aaaaaaaaaaaa-0001'
    expect((await chat(t, key)).status).toBe(200)
    await eventually(() => callsOf(t, key).length === 1)
    const rule = {
      api_key_pattern: 'sk-win-*', action: 'block', window_hours: 5, window_limit_usd: NANO_COST * 1.5, alert_at_pct: [0.9, 0.25],
      provider: 'openai', tokens_per_minute: 1_000_000, reserve: 'max_tokens',
    }
    const created = await admin(t.url, 'POST', '/budgets/rules', { body: rule })
    expect(created.status).toBe(201)
    expect(created.json()).toMatchObject({ ...rule, alert_at_pct: [0.25, 0.9], weekly_limit_usd: null, session_limit_usd: null, model_pattern: null })
    // The call made before the rule existed counts: the meters are loaded from the ledger.
    expect((await chat(t, key)).status).toBe(200)
    await eventually(() => callsOf(t, key).length === 2)
    const refused = await chat(t, key)
    expect(refused.status).toBe(429)
    expect(refused.json().error).toMatchObject({ period: 'window', api_key_pattern: 'sk-win-*' })

    t = await t.restart()
    expect((await admin(t.url, 'GET', '/budgets/rules')).json().find((r: any) => r.api_key_pattern === 'sk-win-*')).toMatchObject({ window_hours: 5, reserve: 'max_tokens', provider: 'openai' })
    const again = await chat(t, key)
    expect(again.status).toBe(429)
    expect(again.json().error.spent_usd).toBeCloseTo(NANO_COST * 2, 15)
  })

  it('refuses a bad new field with a 400 naming it', async () => {
    for (const [body, param] of [
      [{ api_key_pattern: 'sk-x-*', action: 'block', window_hours: 5 }, 'window_limit_usd'],
      [{ api_key_pattern: 'sk-x-*', action: 'block', daily_limit_usd: 1, reserve: 'all' }, 'reserve'],
      [{ api_key_pattern: 'sk-x-*', action: 'block', requests_per_minute: 0 }, 'requests_per_minute'],
      [{ api_key_pattern: 'sk-x-*', action: 'block', daily_limit_usd: 1, alert_at_pct: [1.5] }, 'alert_at_pct'],
      [{ api_key_pattern: 'sk-x-*', action: 'block', daily_limit_usd: 1, tenant: 'a*b' }, 'tenant'],
    ] as const) {
      const r = await admin(t.url, 'POST', '/budgets/rules', { body })
      expect(r.status, param).toBe(400)
      expect(r.json().error).toMatchObject({ type: 'invalid_request', param })
    }
  })
})
