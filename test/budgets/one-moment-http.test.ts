import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { request } from '../support/http'
import { useBoundaryServer } from '../support/boundary-server'
import { NANO_COST, NANO_FIXTURE, chat } from './support'

/**
 * One GET /api/dashboard/budgets answer describes one moment: every key's windows and `overall`
 * are of the same day. Through a real server (SQLite file): key B reached its daily limit on March
 * 31st; key A's call at 00:00:05 rolls A's meter and the day's spend into April 1st. An answer timed
 * a moment before that call (its time read before an await while the call went on, or the clock
 * stepped back) gave A's windows and `overall` for April 1st beside B's for March 31st: B blocked
 * until a midnight already gone, where the proxy, deciding B's next call in April 1st, admits it.
 * The machine's clock is set as the budget tests set it (test/support/fake-date.ts: Date only).
 */
const A = 'sk-moment-aaaaaaaaaaaa-0001'
const B = 'sk-moment-bbbbbbbbbbbb-0002'
const rig = useBoundaryServer(NANO_FIXTURE)

type Win = { period: string; spent_usd: number; pct: number; exhausted_at: string | null; resets_at: string }

describe('the budgets answer at a period boundary', () => {
  it("gives every key's windows for the day its overall is of", async () => {
    const rules = [{ api_key_pattern: 'sk-moment-*', daily_limit_usd: NANO_COST / 2, action: 'block' }]
    const t = await rig.start('2026-03-31T23:50:00Z', { timezone: 'UTC', budgets: { rules } })
    expect((await chat(t, B)).status).toBe(200)
    rig.clock.set('2026-04-01T00:00:05Z')
    expect((await chat(t, A)).status).toBe(200)

    rig.clock.set('2026-03-31T23:59:58Z')
    const r = await request(`${t.url}/api/dashboard/budgets`)
    expect(r.status).toBe(200)
    const body = r.json() as { rules: { api_key_hash: string; windows: Win[] }[]; overall: { period: string; spent_usd: number; resets_at: string }[] }
    const daily = (hash: string) => body.rules.find((x) => x.api_key_hash === hash)!.windows.find((w) => w.period === 'daily')!
    expect(body.overall.find((o) => o.period === 'daily')).toMatchObject({ spent_usd: NANO_COST, resets_at: '2026-04-02T00:00:00.000Z' })
    expect(daily(hashKey(A))).toMatchObject({ spent_usd: NANO_COST, resets_at: '2026-04-02T00:00:00.000Z' })
    expect(daily(hashKey(B))).toMatchObject({ spent_usd: 0, pct: 0, exhausted_at: null, resets_at: '2026-04-02T00:00:00.000Z' })

    // As the proxy decides B's next call, in April 1st: admitted.
    rig.clock.set('2026-04-01T00:00:06Z')
    expect((await chat(t, B)).status).toBe(200)
  })
})
