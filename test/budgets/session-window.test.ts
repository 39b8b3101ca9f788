import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { keyHint } from '../../src/shared/key-hint'
import { request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { NANO_COST, NANO_FIXTURE, chat, replayJson } from './support'

/**
 * A rule's `session_limit_usd` in GET /api/dashboard/budgets (contract: a rule's `windows`, each
 * `{period, limit_usd, spent_usd, pct, projected_usd, exhausted_at, resets_at}`; a refusal's
 * `period` may be `session`): a window of period `session` per key, for its session nearest the
 * limit, as a rule with only a session limit showed no windows at all.
 */
const KEY = 'sk-sess-aaaaaaaaaaaa-0001'
const LIMIT = NANO_COST * 2.5
let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
  t = await startTestServer(
    {
      budgets: {
        rules: [
          { api_key_pattern: 'sk-sess-*', session_limit_usd: LIMIT, action: 'block' },
          { api_key_pattern: 'sk-unused-*', session_limit_usd: 3, daily_limit_usd: 10, action: 'warn' },
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

const budgets = async () => {
  const r = await request(`${t.url}/api/dashboard/budgets`)
  expect(r.status).toBe(200)
  return r.json().rules as any[]
}
const session = (s: string) => ({ 'x-burnrate-session': s })

describe('a rule with a session limit in /api/dashboard/budgets', () => {
  it('a rule no key has used yet shows its session limit with nothing spent, after its calendar windows', async () => {
    const unused = (await budgets()).find((s) => s.rule.api_key_pattern === 'sk-unused-*')
    expect(unused.api_key_hash).toBeNull()
    expect(unused.windows.map((w: any) => w.period)).toEqual(['daily', 'session'])
    expect(unused.windows[1]).toEqual({
      period: 'session', limit_usd: 3, spent_usd: 0, pct: 0, projected_usd: 0, exhausted_at: null, resets_at: null,
      burn_rate_usd_per_hour: 0, session: null, unpriced_requests: 0,
    })
  })

  it("shows each key's session nearest the limit, and that session reaching it, as the proxy refuses it", async () => {
    expect((await chat(t, KEY, {}, session('small'))).status).toBe(200)
    expect((await chat(t, KEY, {}, session('big'))).status).toBe(200)
    expect((await chat(t, KEY, {}, session('big'))).status).toBe(200)
    let entry = (await budgets()).find((s) => s.rule.api_key_pattern === 'sk-sess-*')
    expect(entry).toMatchObject({ api_key_hash: expect.any(String), key_hint: keyHint(KEY) })
    expect(entry.windows).toEqual([
      {
        period: 'session', limit_usd: LIMIT, spent_usd: NANO_COST * 2, pct: (NANO_COST * 2) / LIMIT, projected_usd: NANO_COST * 2,
        exhausted_at: null, resets_at: null, burn_rate_usd_per_hour: 0, session: 'big', unpriced_requests: 0,
      },
    ])
    // The third call of "big" takes it past its limit; the fourth is refused for that session, another session goes on.
    expect((await chat(t, KEY, {}, session('big'))).status).toBe(200)
    const refused = await chat(t, KEY, {}, session('big'))
    expect(refused.status).toBe(429)
    expect(refused.json().error).toMatchObject({ period: 'session', resets_at: null })
    expect((await chat(t, KEY, {}, session('small'))).status).toBe(200)
    entry = (await budgets()).find((s) => s.rule.api_key_pattern === 'sk-sess-*')
    expect(entry.windows).toHaveLength(1)
    expect(entry.windows[0]).toMatchObject({ period: 'session', spent_usd: NANO_COST * 3, session: 'big', resets_at: null })
    expect(entry.windows[0].pct).toBeGreaterThanOrEqual(1)
    expect(Date.parse(entry.windows[0].exhausted_at)).not.toBeNaN()
  })
})
