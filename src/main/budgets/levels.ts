import { shownPattern } from './pattern'
import { reached } from './reached'
import type { PeriodState } from './meter'
import type { Rule } from './rules'
import type { KeyState } from './key-state'
import type { BudgetAlert } from './types'

/**
 * What a level or threshold (`at`) reached by a key under a rule in a period is known by: once per
 * calendar period (its start), once for a rolling window until it re-arms. The limit is part of it:
 * a changed limit has thresholds of its own (a raised limit alerts again), while a reload with the
 * same limit finds its crossings already there. The same on every instance (alerts/claims.ts
 * claims crossings by it).
 */
export function crossingKey(rule: Rule, keyHash: string, p: PeriodState, at: string | number): string {
  return `${rule.source}\n${rule.api_key_pattern}\n${keyHash}\n${p.period}\n${p.period === 'window' ? '' : p.start}\n${p.limit}\n${at}`
}

export function warningLevel(rule: Pick<Rule, 'action' | 'soft_limit_pct'>, p: Pick<PeriodState, 'spent' | 'limit'>): boolean {
  if (rule.action === 'warn' && reached(p.spent, p.limit)) return true
  return rule.soft_limit_pct !== null && reached(p.spent, rule.soft_limit_pct * p.limit)
}

/** A key's level under a rule in a period (also an attached server's, read from its budgets overview: ../desktop-logic/budget-source.ts). */
export function levelOf(rule: Pick<Rule, 'action' | 'soft_limit_pct'>, p: Pick<PeriodState, 'spent' | 'limit'>): BudgetAlert['level'] | null {
  if (rule.action === 'block' && reached(p.spent, p.limit)) return 'blocking'
  return warningLevel(rule, p) ? 'warning' : null
}

/** The tray's and the desktop notifications' alert: a rule on a whole key named by the key's hint, as the dashboard and the webhooks name it. */
export function alertOf(rule: Rule, s: KeyState, p: PeriodState, level: BudgetAlert['level']): BudgetAlert {
  return {
    api_key_pattern: shownPattern(rule.api_key_pattern),
    api_key_hash: s.hash,
    key_hint: s.hint,
    period: p.period,
    level,
    spent_usd: p.spent,
    limit_usd: p.limit,
    resets_at: new Date(p.resetsAt ?? p.start).toISOString(),
  }
}
