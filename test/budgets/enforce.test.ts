import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { startOfNextDay, startOfNextMonth } from '../../src/main/time/zone'
import { eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { NANO_COST, NANO_FIXTURE, callsOf, chat, replayJson, spentToday } from './support'

const TZ = 'Pacific/Auckland'

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
  t = await startTestServer(
    {
      timezone: TZ,
      budgets: {
        rules: [
          // Limits just above one call: the first goes through, the second finds the limit reached.
          { api_key_pattern: 'sk-daily-*', daily_limit_usd: NANO_COST * 0.75, action: 'block' },
          { api_key_pattern: 'sk-month-*', monthly_limit_usd: NANO_COST * 0.75, action: 'block' },
          { api_key_pattern: 'sk-zero-*', daily_limit_usd: 0, action: 'block' },
          { api_key_pattern: 'sk-warn-*', daily_limit_usd: NANO_COST * 0.75, action: 'warn' },
          { api_key_pattern: 'sk-soft-*', daily_limit_usd: NANO_COST * 10, action: 'block', soft_limit_pct: 0.05 },
          { api_key_pattern: 'sk-big-*', daily_limit_usd: 0.00005, action: 'block', reserve: 'max_tokens' },
          // Specificity among config rules: exact beats prefix, longer prefix beats shorter.
          { api_key_pattern: 'sk-spec-*', daily_limit_usd: 0, action: 'block' },
          { api_key_pattern: 'sk-spec-open-*', daily_limit_usd: 100, action: 'block' },
          { api_key_pattern: 'sk-spec-exact-key-0001', daily_limit_usd: 100, action: 'block' },
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
afterEach(() => {
  replayJson(upstream, NANO_FIXTURE)
})

async function spendOnce(key: string): Promise<void> {
  const r = await chat(t, key)
  expect(r.status).toBe(200)
  await eventually(() => spentToday(t, key) > 0)
}

describe('block rules', () => {
  it('refuses a key that reached its daily limit before anything goes upstream, with the contract 429', async () => {
    const key = 'sk-daily-aaaaaaaaaaaa-1234'
    await spendOnce(key)
    const before = upstream.requests.length
    const now = Date.now()
    const r = await chat(t, key)
    expect(r.status).toBe(429)
    expect(upstream.requests.length).toBe(before)
    expect(r.headers['content-type']).toMatch(/^application\/json/)
    expect(r.headers['x-should-retry']).toBe('false')
    const resetsAt = startOfNextDay(now, TZ)
    const retryAfter = Number(r.headers['retry-after'])
    expect(Number.isInteger(retryAfter)).toBe(true)
    // Seconds until local midnight in the configured zone (not UTC, not the machine's zone).
    expect(Math.abs(retryAfter - (resetsAt - now) / 1000)).toBeLessThan(5)
    const body = r.json()
    expect(body.error).toEqual({
      type: 'budget_exceeded',
      message: expect.any(String),
      api_key_pattern: 'sk-daily-*',
      period: 'daily',
      limit_usd: NANO_COST * 0.75,
      spent_usd: NANO_COST,
      resets_at: new Date(resetsAt).toISOString(),
    })
    expect(body.error.message).toContain('sk-daily-*')
    expect(body.error.message).toContain('daily')
    expect(body.error.message).not.toContain(key)

    const rows = callsOf(t, key)
    expect(rows.map((x) => [x.status, x.cost_usd, x.error])).toEqual([
      [200, NANO_COST, null],
      [429, 0, 'budget_exceeded'],
    ])
  })

  it('applies monthly limits with resets_at at the start of next month in the zone', async () => {
    const key = 'sk-month-bbbbbbbbbbbb-1234'
    await spendOnce(key)
    const now = Date.now()
    const r = await chat(t, key)
    expect(r.status).toBe(429)
    expect(r.json().error.period).toBe('monthly')
    expect(r.json().error.resets_at).toBe(new Date(startOfNextMonth(now, TZ)).toISOString())
  })

  it('counts each matching key separately', async () => {
    await spendOnce('sk-daily-cccccccccccc-0001')
    // Same rule, another key: its own spend is 0.
    const other = await chat(t, 'sk-daily-cccccccccccc-0002')
    expect(other.status).toBe(200)
  })

  it('blocks every call under a limit of 0, even the first', async () => {
    const before = upstream.requests.length
    const r = await chat(t, 'sk-zero-dddddddddddd-1234')
    expect(r.status).toBe(429)
    expect(r.json().error).toMatchObject({ limit_usd: 0, spent_usd: 0, period: 'daily' })
    expect(upstream.requests.length).toBe(before)
  })

  it('reserve: max_tokens refuses a call whose worst-case cost alone exceeds what is left, saying so', async () => {
    const before = upstream.requests.length
    // 10k max tokens of gpt-5-nano output = $0.004, over the $0.00005 limit.
    const r = await chat(t, 'sk-big-eeeeeeeeeeee-1234', { max_completion_tokens: 10_000 })
    expect(r.status).toBe(429)
    expect(r.headers['x-should-retry']).toBe('false')
    expect(r.json().error).toMatchObject({ type: 'budget_exceeded', api_key_pattern: 'sk-big-*', spent_usd: 0, limit_usd: 0.00005 })
    expect(r.json().error.message).toMatch(/could cost up to/)
    expect(r.json().error.message).toMatch(/max_tokens/)
    expect(upstream.requests.length).toBe(before)
    // A small enough call fits.
    const small = await chat(t, 'sk-big-eeeeeeeeeeee-1234', { max_completion_tokens: 50 })
    expect(small.status).toBe(200)
  })

  it('lets keys no rule matches through untouched', async () => {
    const r = await chat(t, 'sk-free-ffffffffffff-1234')
    expect(r.status).toBe(200)
    expect(r.headers['x-burnrate-budget-warning']).toBeUndefined()
  })
})

describe('warnings', () => {
  it('a warn rule lets calls through over the limit with X-Burnrate-Budget-Warning', async () => {
    const key = 'sk-warn-gggggggggggg-1234'
    const first = await chat(t, key)
    expect(first.status).toBe(200)
    expect(first.headers['x-burnrate-budget-warning']).toBeUndefined()
    await eventually(() => spentToday(t, key) > 0)
    const second = await chat(t, key)
    expect(second.status).toBe(200)
    const limit = NANO_COST * 0.75
    expect(second.headers['x-burnrate-budget-warning']).toBe(`sk-warn-* daily ${NANO_COST.toFixed(6)}/${limit.toFixed(6)} USD`)
    expect(second.json().model).toBe('gpt-5-nano-2025-08-07')
  })

  it('soft_limit_pct adds the warning under a block rule once that fraction is spent', async () => {
    const key = 'sk-soft-hhhhhhhhhhhh-1234'
    const first = await chat(t, key)
    expect(first.headers['x-burnrate-budget-warning']).toBeUndefined()
    await eventually(() => spentToday(t, key) > 0)
    // One call is 10% of the limit, past the 5% soft limit.
    const second = await chat(t, key)
    expect(second.status).toBe(200)
    expect(second.headers['x-burnrate-budget-warning']).toMatch(/^sk-soft-\* daily \d+\.\d+\/\d+\.\d+ USD$/)
  })
})

describe('precedence among config rules', () => {
  it('an exact key beats a prefix, and a longer prefix beats a shorter one', async () => {
    expect((await chat(t, 'sk-spec-exact-key-0001')).status).toBe(200)
    expect((await chat(t, 'sk-spec-open-iiiiiiiii-1')).status).toBe(200)
    const r = await chat(t, 'sk-spec-other-jjjjjjjj-1')
    expect(r.status).toBe(429)
    expect(r.json().error.api_key_pattern).toBe('sk-spec-*')
  })
})

describe('refusals are recorded', () => {
  it('as status 429, cost 0, in the ledger and never in the spend', async () => {
    const key = 'sk-zero-kkkkkkkkkkkk-1234'
    for (let i = 0; i < 3; i++) expect((await chat(t, key)).status).toBe(429)
    const rows = callsOf(t, key)
    expect(rows).toHaveLength(3)
    for (const row of rows) expect(row).toMatchObject({ status: 429, cost_usd: 0, error: 'budget_exceeded', api_key_hash: hashKey(key) })
    expect(spentToday(t, key)).toBe(0)
  })
})
