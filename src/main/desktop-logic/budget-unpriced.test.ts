import { describe, expect, it } from 'vitest'
import type { BudgetsOverview } from '../../shared/api'
import type { BudgetAlert } from '../budgets/types'
import { polledBudgetUnpriced, withUnpricedCounts } from './budget-unpriced'
import { FakeBudgets, budgetAlert } from './test-helpers'
import type { Timers } from './throttle'

/** A budgets answer of one `sk-dev-*` key whose daily window holds `n` calls of no known price. */
function answer(n: number): BudgetsOverview {
  const w = { period: 'daily', limit_usd: 5, spent_usd: 4.12, pct: 0.824, projected_usd: 6, exhausted_at: null, resets_at: '2026-11-22T00:00:00.000Z', burn_rate_usd_per_hour: 0.5, unpriced_requests: n }
  return { rules: [{ rule: { api_key_pattern: 'sk-dev-*' }, api_key_hash: 'a'.repeat(64), key_hint: 'sk-…9f3a', windows: [w] }], overall: [] } as unknown as BudgetsOverview
}

/** Timers that run a timeout only when told (`fire`). */
function manualTimers(): Timers & { fire(): void } {
  let pending: (() => void) | null = null
  return {
    now: () => 0,
    setTimeout: (fn) => ((pending = fn), 1),
    clearTimeout: () => (pending = null),
    fire: () => {
      const fn = pending
      pending = null
      fn?.()
    },
  }
}

const until = async (cond: () => boolean) => {
  for (let i = 0; i < 1000 && !cond(); i++) await new Promise((r) => setImmediate(r))
  expect(cond()).toBe(true)
}

describe('the own server’s budget windows’ unpriced counts', () => {
  it('reads them from the budgets answer at once and at each poll, and says when they moved', async () => {
    const timers = manualTimers()
    let n = 2
    let changed = 0
    const counts = polledBudgetUnpriced(async () => answer(n), { timers, changed: () => changed++ })
    await counts.ready
    expect(counts.count(budgetAlert())).toBe(2)
    expect(counts.count(budgetAlert({ period: 'monthly' }))).toBe(0)
    expect(counts.count(budgetAlert({ api_key_hash: 'b'.repeat(64) }))).toBe(0)
    expect(changed).toBe(1)
    n = 5
    timers.fire()
    await until(() => counts.count(budgetAlert()) === 5)
    expect(changed).toBe(2)
    counts.stop()
  })

  it('keeps the last counts when a read fails', async () => {
    const timers = manualTimers()
    let fail = false
    const counts = polledBudgetUnpriced(async () => {
      if (fail) throw new Error('closed')
      return answer(3)
    }, { timers })
    await counts.ready
    fail = true
    timers.fire()
    await new Promise((r) => setImmediate(r))
    expect(counts.count(budgetAlert())).toBe(3)
    counts.stop()
  })

  it("marks the monitor's alerts, and tells an alert raised before the first read once it has ended, in order", async () => {
    const monitor = new FakeBudgets()
    let open!: () => void
    const ready = new Promise<void>((r) => (open = r))
    let n = 0
    const marked = withUnpricedCounts(monitor, { count: (a) => (a.period === 'daily' ? n : 0), ready })
    const told: BudgetAlert[] = []
    marked.onAlert((a) => told.push(a))
    monitor.raise(budgetAlert())
    monitor.raise(budgetAlert({ period: 'monthly' }))
    expect(told).toHaveLength(0)
    n = 4
    open()
    await until(() => told.length === 2)
    expect(told.map((a) => [a.period, a.unpriced_requests])).toEqual([['daily', 4], ['monthly', undefined]])
    monitor.raise(budgetAlert({ level: 'blocking' }))
    expect(told[2]).toMatchObject({ level: 'blocking', unpriced_requests: 4 })
    expect(marked.alerts().map((a) => a.unpriced_requests)).toEqual([undefined, 4])
  })
})
