import { Gauge, type Registry } from 'prom-client'
import type { BudgetEngine } from '../budgets/engine'
import { LOOP_REASON, RATE_REASON, REFUSAL_REASON } from '../budgets/gate'
import { shownPattern } from '../budgets/pattern'
import type { Rule } from '../budgets/rules'
import { budgetsOverview } from '../dashboard/budgets'
import type { CallRecord } from '../ledger/record'
import type { SpendTracker } from '../ledger/spend'
import { within } from './wait'

/**
 * A rule's pattern as a label value. Prefix patterns (`sk-dev-*`) are shown as written; a rule
 * on a whole key would put that key in every scrape, so it is shown as its hint (`sk-…9f3a`).
 */
export function ruleLabel(rule: Pick<Rule, 'api_key_pattern'>): string {
  return shownPattern(rule.api_key_pattern)
}

/**
 * Budget utilisation per rule and window (daily, weekly, monthly, rolling window), read at
 * scrape time from the same overview as `GET /api/dashboard/budgets`. Each key under a rule has
 * its own limit, so a rule's utilisation is that of its key nearest the limit.
 */
export function budgetGauges(registry: Registry, engine: () => BudgetEngine | null, spend: SpendTracker): void {
  // Registered first: its collect() also sets the limits, and the limits' collect waits for it
  // (prom-client collects every metric of a scrape at once).
  let limit: Gauge | null = null
  let collecting: Promise<void> = Promise.resolve()
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
      // PostgreSQL: the meters are read from every instance's calls without holding up start-up; a
      // scrape before then waits a moment for them, and has no sample rather than a 0 (an alert on
      // the ratio resolved at each restart).
      if (e.metersRead) return set(this, e)
      collecting = within(() => e.metersRead).then((read) => {
        if (read) set(this, e)
      })
      return collecting
    },
  })
  limit = new Gauge({
    name: 'burnrate_budget_limit_usd',
    help: 'Limit of each effective budget rule and window, per API key, in US dollars.',
    labelNames: ['rule', 'period', 'action'],
    registers: [registry],
    collect() {
      return collecting
    },
  })

  function set(ratio: Gauge, e: BudgetEngine): void {
    const worst = new Map<string, { rule: string; period: string; action: string; pct: number; limit: number }>()
    for (const status of budgetsOverview(e, spend, null, Date.now()).rules) {
      // The overview already shows a rule on a whole key by its hint.
      const rule = status.rule.api_key_pattern
      for (const w of status.windows) {
        // A session's limit is each session's own, not the key's.
        if (w.period === 'session') continue
        const k = `${rule}\n${w.period}\n${status.rule.action}`
        const seen = worst.get(k)
        if (!seen || w.pct > seen.pct) worst.set(k, { rule, period: w.period, action: status.rule.action, pct: w.pct, limit: w.limit_usd })
      }
    }
    for (const w of worst.values()) {
      ratio.labels(w.rule, w.period, w.action).set(w.pct)
      limit?.labels(w.rule, w.period, w.action).set(w.limit)
    }
  }
}

/**
 * The rule label of a refused call: the rule that refused it (a key's scoped rule, or the rule of
 * another key the call carried), else (a runaway's refusal) the effective rule of its key, or `none`.
 */
export function refusalRule(engine: () => BudgetEngine | null): (call: CallRecord) => string {
  return (call) => {
    if (call.refused_rule) return call.refused_rule
    const rule = engine()?.ruleFor(call.api_key_hash)
    return rule ? ruleLabel(rule) : 'none'
  }
}

/** What Burnrate's own gate records as a refused call's `error` (budgets/gate.ts). */
const REFUSALS = new Set<string | null>([REFUSAL_REASON, RATE_REASON, LOOP_REASON])

/**
 * Whether a call is one Burnrate refused before it went upstream: a 429 with the gate's reason.
 * A provider's own 429 is not, also when it carries an error (on the Responses WebSocket, a
 * turn refused before any of the response is recorded 429 with `upstream_error`).
 */
export function isRefusal<C extends Pick<CallRecord, 'status' | 'error'>>(call: C): call is C & { error: string } {
  return call.status === 429 && REFUSALS.has(call.error)
}
