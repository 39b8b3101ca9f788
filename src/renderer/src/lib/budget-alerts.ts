import type { BudgetRule, BudgetStatus, BudgetWindow, BudgetsOverview } from '../../../shared/api'
import { keyHint } from '../../../shared/key-hint'
import { formatInt, formatUsdFull } from '../../../shared/format'
import { budgetShare } from '../../../shared/reached'

export interface BudgetAlertRow {
  key_hint: string
  api_key_hash: string
  pattern: string
  period: BudgetWindow['period']
  /** Hours of a rolling window (`period: 'window'`). */
  window_hours: number | null
  /** The calls the rule counts, when it counts only some of the key's (`agent claude-code`), else ''. */
  scope: string
  spent: number
  limit: number
  /** Of the calls in `spent`, those of a model with no known price (counted as $0): `spent` is then a lower bound. */
  unpriced: number
  /** `over`: the limit is reached (calls blocked under `block`, warned under `warn`); `near`: at or past the soft limit (or 80%). */
  level: 'over' | 'near'
  action: 'block' | 'warn'
}

/**
 * Every limit of a rule, in full dollars: `$10.00/day`, `$60.00/week`, `$200.00/mo`, `$20.00 per 5 h`,
 * `$3.00/session`, `60 requests/min`, `100,000 tokens/min`. A rule with only a weekly or window
 * cap is not one without limits.
 */
export function ruleLimits(r: BudgetRule): string[] {
  const out: string[] = []
  if (r.daily_limit_usd !== null) out.push(`${formatUsdFull(r.daily_limit_usd)}/day`)
  if (r.weekly_limit_usd !== null) out.push(`${formatUsdFull(r.weekly_limit_usd)}/week`)
  if (r.monthly_limit_usd !== null) out.push(`${formatUsdFull(r.monthly_limit_usd)}/mo`)
  if (r.window_limit_usd !== null) out.push(`${formatUsdFull(r.window_limit_usd)} per ${r.window_hours ?? '?'} h`)
  if (r.session_limit_usd !== null) out.push(`${formatUsdFull(r.session_limit_usd)}/session`)
  if (r.requests_per_minute !== null) out.push(`${formatInt(r.requests_per_minute)} requests/min`)
  if (r.tokens_per_minute !== null) out.push(`${formatInt(r.tokens_per_minute)} tokens/min`)
  return out
}

/** The calls a rule counts, when it does not count every call of its keys: `agent claude-code, model gpt-4o*`. */
export function ruleScope(r: BudgetRule): string {
  const parts: string[] = []
  if (r.agent) parts.push(`agent ${r.agent}`)
  if (r.model_pattern) parts.push(`model ${r.model_pattern}`)
  if (r.provider) parts.push(`provider ${r.provider}`)
  if (r.tenant) parts.push(`tenant ${r.tenant}`)
  return parts.join(', ')
}

/**
 * Keys at or near a limit of a rule, the most urgent first. Each figure is the rule's own window
 * for the key (`GET /api/dashboard/budgets`): what the rule counted, within its agent, model,
 * provider and tenant scope, which is what the proxy refuses calls by; never the key's whole spend.
 */
export function budgetAlerts(statuses: BudgetStatus[]): BudgetAlertRow[] {
  const out: BudgetAlertRow[] = []
  for (const s of statuses) {
    const r = s.rule
    // A rule no key has used yet has nothing to warn about; an overridden rule is not in force.
    if (s.api_key_hash === null || r.overridden) continue
    for (const w of s.windows) {
      // The limit reached as the proxy judges it (the server's `pct` says so too).
      const ratio = budgetShare(w.spent_usd, w.limit_usd)
      const soft = r.soft_limit_pct ?? 0.8
      const level = ratio >= 1 ? 'over' : ratio >= soft ? 'near' : null
      if (!level) continue
      out.push({
        key_hint: s.key_hint ?? '',
        api_key_hash: s.api_key_hash,
        pattern: r.api_key_pattern,
        period: w.period,
        window_hours: r.window_hours,
        scope: ruleScope(r),
        spent: w.spent_usd,
        limit: w.limit_usd,
        // (An older server's answer has no count.)
        unpriced: w.unpriced_requests ?? 0,
        level,
        action: r.action,
      })
    }
  }
  const rank = (a: BudgetAlertRow) => (a.level === 'over' ? 0 : 1)
  return out.sort((a, b) => rank(a) - rank(b) || b.spent / (b.limit || 1) - a.spent / (a.limit || 1))
}

/** Every key's alerts, or none while the budgets' figures are not loaded (nothing is claimed without them). */
export function budgetAlertsOf(overview: BudgetsOverview | null): BudgetAlertRow[] {
  return overview ? budgetAlerts(overview.rules) : []
}

/**
 * The entries of `GET /api/dashboard/budgets` for one rule of the admin API (one per key it
 * metered; one with `api_key_hash: null` when none has used it yet). The dashboard names a
 * rule on a whole key by the key's hint, so such a rule is matched by that hint.
 */
export function statusesOf(rule: BudgetRule, statuses: BudgetStatus[]): BudgetStatus[] {
  const whole = !rule.api_key_pattern.endsWith('*')
  return statuses.filter(
    (s) =>
      s.rule.source === rule.source &&
      (s.rule.api_key_pattern === rule.api_key_pattern || (whole && !s.rule.api_key_pattern.endsWith('*') && s.rule.api_key_pattern === keyHint(rule.api_key_pattern))),
  )
}
