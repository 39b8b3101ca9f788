import { describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { useBoundaryServer } from '../support/boundary-server'
import { NANO_COST, NANO_FIXTURE, chat } from './support'

/**
 * GET /api/dashboard/budgets' `overall` at midnight, through a real server: a call at 00:00:05
 * rolls today's spend into April 1st; an answer timed a moment before it (the clock stepped back
 * by NTP, or its time read before an await while the call went on) gives April 1st's figures, so
 * its `resets_at` is the midnight after them, never the midnight already gone.
 * The machine's clock is set as the budget tests set it (test/support/fake-date.ts: Date only).
 */
const KEY = 'sk-overall-aaaaaaaaaaaa-0001'
const rig = useBoundaryServer(NANO_FIXTURE)

describe('overall resets_at at a period boundary', () => {
  it('is the end of the day and month its figures are of', async () => {
    const t = await rig.start('2026-03-31T23:50:00Z', { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-overall-*', daily_limit_usd: 100, action: 'warn' }] } })
    rig.clock.set('2026-04-01T00:00:05Z')
    expect((await chat(t, KEY)).status).toBe(200)
    rig.clock.set('2026-03-31T23:59:58Z')
    const r = await request(`${t.url}/api/dashboard/budgets`)
    expect(r.status).toBe(200)
    const overall = r.json().overall as { period: string; spent_usd: number; resets_at: string }[]
    expect(overall.map((o) => [o.period, o.spent_usd, o.resets_at])).toEqual([
      ['daily', NANO_COST, '2026-04-02T00:00:00.000Z'],
      ['monthly', NANO_COST, '2026-05-01T00:00:00.000Z'],
    ])
  })
})
