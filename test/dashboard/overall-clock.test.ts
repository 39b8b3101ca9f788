import { describe, expect, it } from 'vitest'
import { BudgetEngine } from '../../src/main/budgets/engine'
import { budgetsOverview } from '../../src/main/dashboard/budgets'
import { SpendTracker } from '../../src/main/ledger/spend'

/**
 * `/api/dashboard/budgets`' `overall` on an instance whose budget clock follows another zone's (a
 * laptop with no `timezone` on the team's PostgreSQL, whose clock is New York's): its spend is
 * the ledger's (the laptop's own day), so its `resets_at` and forecast are of that day too, not
 * of New York's day, which would project today's spend over a day it was not spent in.
 */
const at = (s: string) => Date.parse(s)
const HOUR = 3600_000

describe('/api/dashboard/budgets overall, with a budget clock in another zone', () => {
  it('the daily and monthly spend, reset and forecast describe the same day and month', () => {
    // The engine's clock was moved by the database's budget clock (shareBudgetClock: clock.set); the ledger stays in Tokyo.
    const engine = new BudgetEngine('Asia/Tokyo', 1, [], [], { worstCase: () => 0, expected: () => 0, learn: () => {} }, () => [])
    engine.clock.set('America/New_York', 1)
    const spend = new SpendTracker('Asia/Tokyo')
    // $10 at 02:00Z on Mar 10: 11:00 on Mar 10 in Tokyo (whose day began at 15:00Z on Mar 9).
    spend.add('k', at('2026-03-10T02:00:00Z'), 10, at('2026-03-10T02:00:00Z'))
    const now = at('2026-03-10T14:00:00Z') // 23:00 in Tokyo: 23 hours into its day, 1 left
    const { overall } = budgetsOverview(engine, spend, null, now)
    const daily = overall.find((o) => o.period === 'daily')!
    expect(daily.spent_usd).toBe(10)
    expect(daily.resets_at).toBe('2026-03-10T15:00:00.000Z')
    expect(daily.burn_rate_usd_per_hour).toBeCloseTo(10 / 23, 12)
    expect(daily.projected_usd).toBeCloseTo(10 + 10 / 23, 12)
    const monthly = overall.find((o) => o.period === 'monthly')!
    expect(monthly.spent_usd).toBe(10)
    // Tokyo's April begins at 15:00Z on Mar 31 (New York's at 04:00Z on Apr 1).
    expect(monthly.resets_at).toBe('2026-03-31T15:00:00.000Z')
    const elapsed = (now - at('2026-02-28T15:00:00Z')) / HOUR
    expect(monthly.burn_rate_usd_per_hour).toBeCloseTo(10 / elapsed, 12)
  })
})
