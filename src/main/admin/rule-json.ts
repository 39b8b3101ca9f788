import type { BudgetRule } from '../../shared/api'
import type { Rule } from '../budgets/rules'

export function ruleJson(rule: Rule, overridden = false): BudgetRule {
  return {
    api_key_pattern: rule.api_key_pattern,
    daily_limit_usd: rule.daily_limit_usd,
    monthly_limit_usd: rule.monthly_limit_usd,
    action: rule.action,
    soft_limit_pct: rule.soft_limit_pct,
    source: rule.source,
    overridden,
    created_at: rule.created_at === null ? null : new Date(rule.created_at).toISOString(),
  }
}
