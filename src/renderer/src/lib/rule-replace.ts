import { type BudgetRule, type BudgetRuleOptions, RULE_OPTION_FIELDS } from '../../../shared/api'
import { formatPct, formatUsdFull } from '../../../shared/format'
import { ruleLimits, ruleScope } from './budget-alerts'

/**
 * The rule a save for `pattern` replaces (the runtime rule with that pattern), or overrides (the
 * config rule, when no runtime rule has it yet); null for a new pattern.
 */
export function ruleFor(rules: BudgetRule[], pattern: string): BudgetRule | null {
  const p = pattern.trim()
  if (!p) return null
  return rules.find((r) => r.api_key_pattern === p && r.source === 'runtime') ?? rules.find((r) => r.api_key_pattern === p && r.source === 'config') ?? null
}

/** The settings of `rule` the rule form does not show (weekly, window, session and per-minute limits, scope, alert points, reserve). */
export function optionsOf(rule: BudgetRule): BudgetRuleOptions {
  const out: Record<string, unknown> = {}
  for (const f of RULE_OPTION_FIELDS) out[f] = rule[f]
  return out as unknown as BudgetRuleOptions
}

/** Those settings in words, when the rule has any: `$30.00/week · $2.00/session · agent claude-code · alerts at 50%, 90% · reserve max_tokens`. */
export function keptSettings(rule: BudgetRule): string[] {
  const out = ruleLimits({ ...rule, daily_limit_usd: null, monthly_limit_usd: null })
  const scope = ruleScope(rule)
  if (scope) out.push(scope)
  if (rule.alert_at_pct?.length) out.push(`alerts at ${rule.alert_at_pct.map((p) => formatPct(p)).join(', ')}`)
  if (rule.reserve !== 'expected') out.push(`reserve ${rule.reserve}`)
  return out
}

/** What the form's own fields replace: `$5.00/day, block, warn at 70%`. */
export function replacedSettings(rule: BudgetRule): string {
  const parts: string[] = []
  parts.push(rule.daily_limit_usd === null ? 'no daily limit' : `${formatUsdFull(rule.daily_limit_usd)}/day`)
  parts.push(rule.monthly_limit_usd === null ? 'no monthly limit' : `${formatUsdFull(rule.monthly_limit_usd)}/mo`)
  parts.push(rule.action)
  if (rule.soft_limit_pct !== null) parts.push(`warn at ${formatPct(rule.soft_limit_pct)}`)
  return parts.join(', ')
}
