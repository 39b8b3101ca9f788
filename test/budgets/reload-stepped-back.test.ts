import { describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { hashKey } from '../../src/main/proxy/attribution'
import { request } from '../support/http'
import { useBoundaryServer } from '../support/boundary-server'
import { NANO_COST, NANO_FIXTURE, chat } from './support'

/**
 * A rule change rebuilds the meters from the ledger (README: Budgets, Periods: a period never goes
 * back). Through a real server (SQLite file): a key's call at 00:00:05 reaches its daily limit of
 * April 1st; the wall clock is then stepped back to 23:59:58 (NTP) and a rule is added meanwhile.
 * The meters were rebuilt in March 31st, the day that had ended, with that call in it: the budgets
 * answer showed it spent in March 31st, resetting at a midnight already gone, and the key's next
 * call, at 00:00:06, found April 1st at $0 and was let through over its limit.
 * The machine's clock is set as the budget tests set it (test/support/fake-date.ts: Date only).
 */
const KEY = 'sk-stepback-aaaaaaaaaaaa-0001'
const rig = useBoundaryServer(NANO_FIXTURE)

describe('a rule change while the clock is stepped back across midnight', () => {
  it('rebuilds the meters in the day they had rolled into', async () => {
    const rules = [{ api_key_pattern: 'sk-stepback-*', daily_limit_usd: NANO_COST / 2, action: 'block' }]
    const t = await rig.start('2026-03-31T23:50:00Z', { ...ADMIN_CONFIG, timezone: 'UTC', budgets: { rules } })
    rig.clock.set('2026-04-01T00:00:05Z')
    expect((await chat(t, KEY)).status).toBe(200)

    rig.clock.set('2026-03-31T23:59:58Z')
    expect((await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-other-*', daily_limit_usd: 5, action: 'warn' } })).status).toBe(201)
    const r = await request(`${t.url}/api/dashboard/budgets`)
    const mine = (r.json().rules as { api_key_hash: string | null; windows: { period: string; spent_usd: number; resets_at: string }[] }[]).find((x) => x.api_key_hash === hashKey(KEY))!
    expect(mine.windows).toMatchObject([{ period: 'daily', spent_usd: NANO_COST, resets_at: '2026-04-02T00:00:00.000Z' }])

    rig.clock.set('2026-04-01T00:00:06Z')
    expect((await chat(t, KEY)).status).toBe(429)
  })
})
