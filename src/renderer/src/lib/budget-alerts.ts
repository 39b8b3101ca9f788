import type { ApiKeyUsage } from '../../../shared/api'

export interface BudgetAlertRow {
  key_hint: string
  api_key_hash: string
  pattern: string
  period: 'daily' | 'monthly'
  spent: number
  limit: number
  /** `over`: the limit is reached (calls blocked under `block`, warned under `warn`); `near`: at or past the soft limit (or 80%). */
  level: 'over' | 'near'
  action: 'block' | 'warn'
}

/** Keys at or near a limit of their effective rule, the most urgent first. */
export function budgetAlerts(keys: ApiKeyUsage[]): BudgetAlertRow[] {
  const out: BudgetAlertRow[] = []
  for (const k of keys) {
    const r = k.rule
    if (!r || r.overridden) continue
    const check = (period: 'daily' | 'monthly', spent: number, limit: number | null) => {
      if (limit === null) return
      const ratio = limit === 0 ? 1 : spent / limit
      const soft = r.soft_limit_pct ?? 0.8
      const level = ratio >= 1 ? 'over' : ratio >= soft ? 'near' : null
      if (level) out.push({ key_hint: k.key_hint, api_key_hash: k.api_key_hash, pattern: r.api_key_pattern, period, spent, limit, level, action: r.action })
    }
    check('daily', k.spend_today_usd, r.daily_limit_usd)
    check('monthly', k.spend_month_usd, r.monthly_limit_usd)
  }
  const rank = (a: BudgetAlertRow) => (a.level === 'over' ? 0 : 1)
  return out.sort((a, b) => rank(a) - rank(b) || b.spent / (b.limit || 1) - a.spent / (a.limit || 1))
}
