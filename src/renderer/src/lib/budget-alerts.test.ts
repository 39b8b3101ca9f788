import { describe, expect, it } from 'vitest'
import { type ApiKeyUsage, type BudgetRule, DEFAULT_RULE_OPTIONS } from '../../../shared/api'
import { budgetAlerts } from './budget-alerts'

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
const key = (hint: string, today: number, month: number, r: BudgetRule | null = rule()): ApiKeyUsage => ({
  api_key_hash: hint,
  key_hint: hint,
  tenant: '',
  requests_month: 1,
  spend_today_usd: today,
  spend_month_usd: month,
  last_seen_at: null,
  rule: r,
})

describe('budgetAlerts', () => {
  it('lists keys over a limit first, then those near it', () => {
    const a = budgetAlerts([key('a', 8.5, 10), key('b', 10, 20), key('c', 1, 1), key('d', 100, 100, null)])
    expect(a.map((x) => [x.key_hint, x.period, x.level])).toEqual([
      ['b', 'daily', 'over'],
      ['a', 'daily', 'near'],
    ])
  })
  it('uses the soft limit when the rule has one, and a zero limit is always reached', () => {
    expect(budgetAlerts([key('a', 5, 5, rule({ soft_limit_pct: 0.5 }))])[0].level).toBe('near')
    expect(budgetAlerts([key('a', 0, 0, rule({ daily_limit_usd: 0, monthly_limit_usd: null }))])[0]).toMatchObject({ level: 'over', period: 'daily' })
  })
})
