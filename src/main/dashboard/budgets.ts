import type { BudgetsOverview, BudgetStatus, BudgetWindow } from '../../shared/api'
import { ruleJson } from '../admin/rule-json'
import type { BudgetEngine } from '../budgets/engine'
import { forecast } from '../budgets/forecast'
import { Meter, type PeriodState } from '../budgets/meter'
import { isPrefix } from '../budgets/pattern'
import { budgetShare } from '../budgets/reached'
import type { SpendTracker } from '../ledger/spend'
import { keyHint } from '../../shared/key-hint'

const HOUR = 3600_000

function windowOf(p: PeriodState, now: number): BudgetWindow {
  const f = forecast(p, now)
  return {
    period: p.period as BudgetWindow['period'],
    limit_usd: p.limit,
    spent_usd: p.spent,
    // At least 1 once the limit counts as reached (within the budgets' float drift), as the proxy judges it.
    pct: budgetShare(p.spent, p.limit),
    projected_usd: f.projected,
    exhausted_at: f.exhaustedAt === null ? null : new Date(f.exhaustedAt).toISOString(),
    resets_at: new Date(p.resetsAt ?? now).toISOString(),
    burn_rate_usd_per_hour: f.rate * HOUR,
  }
}

/** `GET /api/dashboard/budgets`: every rule in force, per API key it applies to, with each window's forecast. */
export function budgetsOverview(engine: BudgetEngine, spend: SpendTracker, tenant: string | null, now: number): BudgetsOverview {
  const overrides = new Set(engine.rules.runtime.map((r) => r.api_key_pattern))
  const rules: BudgetStatus[] = []
  for (const { rule, keys } of engine.status()) {
    const json = ruleJson(rule, rule.source === 'config' && overrides.has(rule.api_key_pattern))
    // A rule on a whole key names the key; the dashboard (unlike the admin API) shows only its hint.
    if (!isPrefix(json.api_key_pattern)) json.api_key_pattern = keyHint(json.api_key_pattern)
    const shown = tenant === null ? keys : keys.filter((k) => k.key.tenant === tenant)
    if (shown.length === 0) {
      // A rule no key has used yet: its windows, empty.
      const periods = new Meter(rule, engine.clock).periods(now)
      rules.push({ rule: json, api_key_hash: null, key_hint: null, windows: periods.map((p) => windowOf(p, now)) })
      continue
    }
    for (const { key, meter } of shown) {
      rules.push({ rule: json, api_key_hash: key.hash, key_hint: key.hint, windows: meter.periods(now).map((p) => windowOf(p, now)) })
    }
  }
  rules.sort(
    (a, b) =>
      Math.max(0, ...b.windows.map((w) => w.pct)) - Math.max(0, ...a.windows.map((w) => w.pct)) ||
      a.rule.api_key_pattern.localeCompare(b.rule.api_key_pattern) ||
      (a.api_key_hash ?? '').localeCompare(b.api_key_hash ?? ''),
  )
  const overall: BudgetsOverview['overall'] = []
  if (tenant === null) {
    // The totals are counted in the ledger's day and month (the config's `timezone`), which the
    // budget clock (shared on PostgreSQL: another zone, possibly) need not be: the reset and the
    // pace come from the same clock as the spend, so the three describe one day.
    const totals = spend.totals(now)
    const day = spend.clock.dayOf(now)
    const month = spend.clock.monthOf(now)
    for (const [period, spent, p] of [['daily', totals.day, day], ['monthly', totals.month, month]] as const) {
      const f = forecast({ period, limit: Infinity, spent, start: p.start, resetsAt: p.end }, now)
      overall.push({ period, spent_usd: spent, projected_usd: f.projected, resets_at: new Date(p.end).toISOString(), burn_rate_usd_per_hour: f.rate * HOUR })
    }
  }
  return { rules, overall }
}
