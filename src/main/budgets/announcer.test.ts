import { describe, expect, it } from 'vitest'
import { PeriodClock } from '../time/zone'
import { BudgetAnnouncer } from './announcer'
import type { KeyState } from './key-state'
import type { Meter, PeriodState } from './meter'
import type { Rule } from './rules'

const DAY = 86_400_000
const rule = { source: 'config', api_key_pattern: 'sk-team-*', alert_at_pct: null, soft_limit_pct: null, action: 'warn' } as unknown as Rule
const meter = { rule } as unknown as Meter
const key = (hash: string) => ({ hash }) as KeyState

describe('threshold alerts of a server that runs for a month with thousands of keys', () => {
  it("forgets the ended days' crossings, so a key's monthly thresholds are never announced twice in the month", () => {
    const a = new BudgetAnnouncer(new PeriodClock('UTC'))
    const seen: string[] = []
    a.onThreshold((e) => seen.push(`${e.key.hash} ${e.state.period} ${e.pct}`))
    const month = Date.UTC(2026, 11, 1)
    const monthly = (spent: number): PeriodState[] => [{ period: 'monthly', limit: 100, spent, start: month, resetsAt: Date.UTC(2027, 0, 1) }]
    a.thresholds(key('KEY-A'), meter, month + 3_600_000, false, monthly(95))
    expect(seen.splice(0)).toEqual(['KEY-A monthly 0.5', 'KEY-A monthly 0.8', 'KEY-A monthly 0.9'])
    // Each day of the month, 850 keys cross their daily limits' four thresholds: 102,000 crossings in all.
    for (let d = 0; d < 30; d++) {
      const day = month + d * DAY
      for (let i = 0; i < 850; i++) a.thresholds(key(`K${i}`), meter, day + 43_200_000, false, [{ period: 'daily', limit: 1, spent: 1, start: day, resetsAt: day + DAY }])
    }
    expect(seen).toHaveLength(30 * 850 * 4)
    seen.length = 0
    // Day 31: KEY-A's next call, its spend barely moved.
    a.thresholds(key('KEY-A'), meter, month + 30 * DAY + 3_600_000, false, monthly(95.01))
    expect(seen).toEqual([])
  })
})
