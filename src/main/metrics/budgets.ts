import { Gauge, type Registry } from 'prom-client'
import type { BudgetEngine } from '../budgets/engine'
import { isPrefix } from '../budgets/pattern'
import type { Rule } from '../budgets/rules'
import type { CallRecord } from '../ledger/record'
import type { SpendTracker } from '../ledger/spend'
import { keyHint } from '../proxy/attribution'

/**
 * A rule's pattern as a label value. Prefix patterns (`sk-dev-*`) are shown as written; a rule
 * on a whole key would put that key in every scrape, so it is shown as its hint (`sk-…9f3a`).
 */
export function ruleLabel(rule: Pick<Rule, 'api_key_pattern'>): string {
  const p = rule.api_key_pattern
  return isPrefix(p) ? p : keyHint(p)
}

/** The windows of a rule this reads: the engine's daily and monthly limits. */
function windows(rule: Rule): { period: 'daily' | 'monthly'; limit: number }[] {
  const out: { period: 'daily' | 'monthly'; limit: number }[] = []
  if (rule.daily_limit_usd !== null) out.push({ period: 'daily', limit: rule.daily_limit_usd })
  if (rule.monthly_limit_usd !== null) out.push({ period: 'monthly', limit: rule.monthly_limit_usd })
  return out
}

/** Spent over limit; a limit of 0 blocks every call, so it is always used up. */
function ratio(spent: number, limit: number): number {
  return limit > 0 ? spent / limit : 1
}

/**
 * Budget utilisation per rule and window, read from the budget engine's public state at
 * scrape time (its rules, the keys seen this month and their effective rule) and the ledger's
 * in-memory spend. Each key under a rule has its own limit, so a rule's utilisation is that of
 * its key nearest the limit. Reads the daily and monthly limits the engine has today; rules with
 * more windows (weekly, rolling) belong in `windows()` once the engine has them.
 */
export function budgetGauges(registry: Registry, engine: () => BudgetEngine | null, spend: SpendTracker): void {
  // Registered first: its collect() also sets the limits, before they are written out.
  let limit: Gauge | null = null
  new Gauge({
    name: 'burnrate_budget_utilization_ratio',
    help: "Spend over limit of the rule's API key nearest its limit, per rule and window (1 = limit reached).",
    labelNames: ['rule', 'period', 'action'],
    registers: [registry],
    collect() {
      this.reset()
      limit?.reset()
      const e = engine()
      if (!e) return
      const now = Date.now()
      const worst = new Map<Rule, Map<string, number>>()
      for (const { rule, overridden } of e.rules.list()) if (!overridden) worst.set(rule, new Map())
      for (const k of e.keysThisMonth(now)) {
        const rule = e.ruleFor(k.hash)
        const w = rule && worst.get(rule)
        if (!rule || !w) continue
        const s = spend.key(k.hash, now)
        for (const { period, limit: l } of windows(rule)) {
          const r = ratio(period === 'daily' ? s.day : s.month, l)
          if (r > (w.get(period) ?? 0)) w.set(period, r)
        }
      }
      for (const [rule, w] of worst) {
        const name = ruleLabel(rule)
        for (const { period, limit: l } of windows(rule)) {
          this.labels(name, period, rule.action).set(w.get(period) ?? 0)
          limit?.labels(name, period, rule.action).set(l)
        }
      }
    },
  })
  limit = new Gauge({
    name: 'burnrate_budget_limit_usd',
    help: 'Limit of each effective budget rule and window, per API key, in US dollars.',
    labelNames: ['rule', 'period', 'action'],
    registers: [registry],
  })
}

/** The rule label of a refused call: the effective rule of its key, or `none`. */
export function refusalRule(engine: () => BudgetEngine | null): (call: CallRecord) => string {
  return (call) => {
    const rule = engine()?.ruleFor(call.api_key_hash)
    return rule ? ruleLabel(rule) : 'none'
  }
}
