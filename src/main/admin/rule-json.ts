import { RULE_OPTION_FIELDS, type BudgetRule } from '../../shared/api'
import type { Rule } from '../budgets/rules'

export function ruleJson(rule: Rule, overridden = false): BudgetRule {
  const out: Record<string, unknown> = {
    api_key_pattern: rule.api_key_pattern,
    daily_limit_usd: rule.daily_limit_usd,
    monthly_limit_usd: rule.monthly_limit_usd,
    action: rule.action,
    soft_limit_pct: rule.soft_limit_pct,
  }
  for (const f of RULE_OPTION_FIELDS) out[f] = rule[f]
  out.source = rule.source
  out.overridden = overridden
  out.created_at = rule.created_at === null ? null : new Date(rule.created_at).toISOString()
  return out as unknown as BudgetRule
}
