import { describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { useBoundaryServer } from '../support/boundary-server'
import type { TestServer } from '../support/server'
import { NANO_COST, NANO_FIXTURE, chat } from './support'

/**
 * GET /api/dashboard/budgets' rule windows at a period boundary, through a real server (SQLite
 * file): a call at 00:00:05 rolls the meters into April 1st; an answer timed a moment before it
 * (its time read before an await while the call went on, or the clock stepped back by NTP) shows
 * April 1st's spend, so its forecast is April 1st's too: `exhausted_at` is never a time before
 * the window it is of began, and the pace and projection are those read at that window's start.
 * The machine's clock is set as the budget tests set it (test/support/fake-date.ts: Date only).
 */
const KEY = 'sk-winmid-aaaaaaaaaaaa-0001'
const rig = useBoundaryServer(NANO_FIXTURE)

type Win = { period: string; spent_usd: number; exhausted_at: string | null; resets_at: string; projected_usd: number; burn_rate_usd_per_hour: number }

async function windows(t: TestServer): Promise<Win[]> {
  const r = await request(`${t.url}/api/dashboard/budgets`)
  expect(r.status).toBe(200)
  const rules = r.json().rules as { api_key_hash: string | null; windows: Win[] }[]
  const mine = rules.filter((x) => x.api_key_hash !== null)
  expect(mine).toHaveLength(1)
  return mine[0].windows
}

describe("a rule's windows read at a period boundary", () => {
  it('are forecast in the period their spend is of, never exhausted before it began', async () => {
    // The daily limit is reached by one call; the monthly one a fraction of a second of its pace later.
    const rules = [{ api_key_pattern: 'sk-winmid-*', daily_limit_usd: NANO_COST / 2, monthly_limit_usd: NANO_COST * 1.0001, action: 'warn' }]
    const t = await rig.start('2026-03-31T23:50:00Z', { timezone: 'UTC', budgets: { rules } })
    rig.clock.set('2026-04-01T00:00:05Z')
    expect((await chat(t, KEY)).status).toBe(200)

    rig.clock.set('2026-03-31T23:59:58Z')
    const early = await windows(t)
    const start = Date.parse('2026-04-01T00:00:00Z')
    expect(early.map((w) => [w.period, w.spent_usd])).toEqual([['monthly', NANO_COST], ['daily', NANO_COST]])
    for (const w of early) {
      expect(w.exhausted_at, w.period).not.toBeNull()
      expect(Date.parse(w.exhausted_at!), `${w.period} exhausted_at ${w.exhausted_at}`).toBeGreaterThanOrEqual(start)
    }
    // Read in its own day, the same answer.
    rig.clock.set(start)
    expect(early).toEqual(await windows(t))
  })
})
