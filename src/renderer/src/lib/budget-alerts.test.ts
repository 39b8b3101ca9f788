import { describe, expect, it } from 'vitest'
import { type BudgetRule, type BudgetStatus, type BudgetWindow, DEFAULT_RULE_OPTIONS } from '../../../shared/api'
import { budgetAlerts, budgetAlertsOf, statusesOf } from './budget-alerts'

const rule = (over: Partial<BudgetRule> = {}): BudgetRule => ({
  ...DEFAULT_RULE_OPTIONS,
  api_key_pattern: 'sk-*',
  daily_limit_usd: 10,
  monthly_limit_usd: 100,
  action: 'block',
  soft_limit_pct: null,
  source: 'runtime',
  overridden: false,
  created_at: null,
  ...over,
})
const win = (period: BudgetWindow['period'], spent: number, limit: number): BudgetWindow => ({
  period,
  limit_usd: limit,
  spent_usd: spent,
  pct: limit > 0 ? spent / limit : 1,
  projected_usd: spent,
  exhausted_at: null,
  resets_at: '2026-11-22T00:00:00.000Z',
  burn_rate_usd_per_hour: 0,
  unpriced_requests: 0,
})
/** A key under a rule, with the rule's own daily and monthly windows for it. */
const status = (hint: string, today: number, month: number, r: BudgetRule = rule()): BudgetStatus => ({
  rule: r,
  api_key_hash: hint,
  key_hint: hint,
  windows: [win('monthly', month, r.monthly_limit_usd ?? 0), win('daily', today, r.daily_limit_usd ?? 0)],
})

describe('budgetAlerts', () => {
  it("carries each window's count of calls of no known price (0 from an older server's answer without it)", () => {
    const s = status('a', 9, 10)
    s.windows[1].unpriced_requests = 3
    delete (s.windows[0] as Partial<BudgetWindow>).unpriced_requests
    s.windows[0].spent_usd = 95
    expect(budgetAlerts([s]).map((x) => [x.period, x.unpriced])).toEqual([['monthly', 0], ['daily', 3]])
  })

  it('lists keys over a limit first, then those near it', () => {
    const a = budgetAlerts([status('a', 8.5, 10), status('b', 10, 20), status('c', 1, 1)])
    expect(a.map((x) => [x.key_hint, x.period, x.level])).toEqual([
      ['b', 'daily', 'over'],
      ['a', 'daily', 'near'],
    ])
  })
  it('uses the soft limit when the rule has one, and a zero limit is always reached', () => {
    expect(budgetAlerts([status('a', 5, 5, rule({ soft_limit_pct: 0.5 }))])[0].level).toBe('near')
    const zero = rule({ daily_limit_usd: 0, monthly_limit_usd: null })
    expect(budgetAlerts([{ ...status('a', 0, 0, zero), windows: [win('daily', 0, 0)] }])[0]).toMatchObject({ level: 'over', period: 'daily' })
  })
  it("judges a scoped rule by its own window, never by the key's whole spend", () => {
    // A block rule counting only claude-code's calls: the key spent under other agents only.
    const scoped = rule({ agent: 'claude-code', daily_limit_usd: 0.000001, monthly_limit_usd: null })
    const unused: BudgetStatus = { rule: scoped, api_key_hash: null, key_hint: null, windows: [win('daily', 0, 0.000001)] }
    expect(budgetAlerts([unused])).toEqual([])
    // Once the rule has counted past its limit, the alert says which calls it refuses.
    const reached: BudgetStatus = { rule: scoped, api_key_hash: 'h', key_hint: 'sk-…0001', windows: [win('daily', 0.0004, 0.000001)] }
    expect(budgetAlerts([reached])[0]).toMatchObject({ level: 'over', action: 'block', scope: 'agent claude-code' })
  })
  it('claims nothing while the budgets are not loaded, and skips overridden rules', () => {
    expect(budgetAlertsOf(null)).toEqual([])
    expect(budgetAlerts([status('a', 20, 200, rule({ overridden: true }))])).toEqual([])
  })
})

describe('statusesOf', () => {
  it("finds a rule's entries by source and pattern, a whole-key rule by the key's hint", () => {
    const prefix = status('a', 1, 1)
    const whole = status('b', 1, 1, rule({ api_key_pattern: 'sk-…cdef', source: 'config' }))
    expect(statusesOf(rule(), [prefix, whole])).toEqual([prefix])
    expect(statusesOf(rule({ source: 'config' }), [prefix, whole])).toEqual([])
    expect(statusesOf(rule({ api_key_pattern: 'sk-whole-key-abcdef', source: 'config' }), [prefix, whole])).toEqual([whole])
  })
})
