import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { forecast } from '../../src/main/budgets/forecast'
import { hashKey } from '../../src/main/proxy/attribution'
import { keyHint } from '../../src/shared/key-hint'
import { startOfNextDay } from '../../src/main/time/zone'
import { NANO_COST, NANO_FIXTURE, callsOf, chat, replayJson } from '../budgets/support'
import { eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { getJson } from './seed'

const EXACT = 'sk-exact-secret-key-000000000001'
let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
  t = await startTestServer(
    {
      timezone: 'UTC',
      budgets: {
        rules: [
          { api_key_pattern: 'sk-team-*', daily_limit_usd: NANO_COST * 2, monthly_limit_usd: 100, window_hours: 5, window_limit_usd: 1, action: 'block' },
          { api_key_pattern: 'sk-idle-*', weekly_limit_usd: 3, action: 'warn' },
          { api_key_pattern: EXACT, daily_limit_usd: 1, action: 'warn' },
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

describe('GET /api/dashboard/budgets', () => {
  it('every rule and window per key: limit, spent, pct, projection, exhaustion, reset', async () => {
    const key = 'sk-team-aaaaaaaaaaaa-0001'
    for (let i = 0; i < 2; i++) expect((await chat(t, key, {}, { 'x-burnrate-tenant': 'acme' })).status).toBe(200)
    await eventually(() => callsOf(t, key).length === 2)
    const now = Date.now()
    const { status, body } = await getJson(`${t.url}/api/dashboard/budgets`)
    expect(status).toBe(200)
    const team = body.rules.find((r: any) => r.rule.api_key_pattern === 'sk-team-*')
    expect(team).toMatchObject({ api_key_hash: hashKey(key), key_hint: keyHint(key), rule: { source: 'config', window_hours: 5 } })
    expect(team.windows.map((w: any) => w.period)).toEqual(['monthly', 'daily', 'window'])
    const daily = team.windows.find((w: any) => w.period === 'daily')
    expect(daily.spent_usd).toBeCloseTo(NANO_COST * 2, 15)
    expect(daily).toMatchObject({ limit_usd: NANO_COST * 2, resets_at: new Date(startOfNextDay(now, 'UTC')).toISOString() })
    expect(daily.pct).toBeCloseTo(1, 12)
    // Reached: exhausted now, not at some projected time.
    expect(Math.abs(Date.parse(daily.exhausted_at) - now)).toBeLessThan(60_000)
    const monthly = team.windows.find((w: any) => w.period === 'monthly')
    expect(monthly.projected_usd).toBeGreaterThanOrEqual(monthly.spent_usd)
    expect(monthly.burn_rate_usd_per_hour).toBeGreaterThan(0)
    // An unused rule shows its windows at $0; a rule on a whole key shows only the key's hint.
    expect(body.rules.find((r: any) => r.rule.api_key_pattern === 'sk-idle-*')).toMatchObject({
      api_key_hash: null,
      windows: [{ period: 'weekly', limit_usd: 3, spent_usd: 0, pct: 0, projected_usd: 0, exhausted_at: null }],
    })
    expect(JSON.stringify(body)).not.toContain(EXACT)
    expect(body.rules.some((r: any) => r.rule.api_key_pattern === keyHint(EXACT))).toBe(true)
    expect(body.overall.map((o: any) => o.period)).toEqual(['daily', 'monthly'])
    expect(body.overall[0].spent_usd).toBeCloseTo(NANO_COST * 2, 15)
  })

  it('tenant= shows only the keys of that tenant', async () => {
    const acme = (await getJson(`${t.url}/api/dashboard/budgets?tenant=acme`)).body
    expect(acme.rules.filter((r: any) => r.api_key_hash !== null).map((r: any) => r.rule.api_key_pattern)).toEqual(['sk-team-*'])
    expect(acme.overall).toEqual([])
    const other = (await getJson(`${t.url}/api/dashboard/budgets?tenant=nobody`)).body
    expect(other.rules.every((r: any) => r.api_key_hash === null)).toBe(true)
  })
})

describe('forecast', () => {
  const HOUR = 3600_000
  it('projects a calendar period at its pace so far and says when the limit falls', () => {
    const start = 0
    // $2 in the first 4 hours of a 24-hour day: $0.5/h, $12 by the end; a $10 limit falls at hour 20.
    const f = forecast({ period: 'daily', limit: 10, spent: 2, start, resetsAt: 24 * HOUR }, 4 * HOUR)
    expect(f.rate * HOUR).toBeCloseTo(0.5, 12)
    expect(f.projected).toBeCloseTo(12, 12)
    expect(f.exhaustedAt).toBe(20 * HOUR)
    // A limit the pace does not reach before the reset: null.
    expect(forecast({ period: 'daily', limit: 20, spent: 2, start, resetsAt: 24 * HOUR }, 4 * HOUR).exhaustedAt).toBeNull()
    // A first call a minute into the day is paced over an hour, not a minute.
    expect(forecast({ period: 'daily', limit: 100, spent: 1, start, resetsAt: 24 * HOUR }, 60_000).projected).toBeLessThan(25)
  })
})
