import { ConfigError } from '../config/load'
import { Pricer } from '../pricing/price'
import type { Feature, ServerContext } from '../server/context'
import { PeriodClock } from '../time/zone'
import { BudgetEngine } from './engine'
import { budgetGate } from './gate'
import type { Rule } from './rules'
import { RuleStore } from './store'
import { worstCaseUsd } from './worst-case'

export interface Budgets {
  engine: BudgetEngine
  store: RuleStore
}

const installed = new WeakMap<ServerContext, Budgets>()

function configRules(ctx: ServerContext): Rule[] {
  const seen = new Map<string, number>()
  return ctx.config.budgets.rules.map((r, i) => {
    const first = seen.get(r.api_key_pattern)
    if (first !== undefined) {
      throw new ConfigError(
        `budgets.rules[${i}].api_key_pattern: "${r.api_key_pattern}" is already the pattern of budgets.rules[${first}]; a pattern can have one rule`,
      )
    }
    seen.set(r.api_key_pattern, i)
    return {
      api_key_pattern: r.api_key_pattern,
      daily_limit_usd: r.daily_limit_usd ?? null,
      monthly_limit_usd: r.monthly_limit_usd ?? null,
      action: r.action,
      soft_limit_pct: r.soft_limit_pct ?? null,
      source: 'config',
      created_at: null,
    }
  })
}

/** The budget engine and rule store of a server, created (and installed as its gate) on first use. */
export function budgetsOf(ctx: ServerContext): Budgets {
  const existing = installed.get(ctx)
  if (existing) return existing
  const pricer = ctx.pricer ?? new Pricer(ctx.config.pricing.overrides)
  let engine: BudgetEngine | null = null
  const store = new RuleStore(ctx.db, (rules) => engine?.setRuntimeRules(rules))
  engine = new BudgetEngine(ctx.ledger.spend, ctx.config.timezone, configRules(ctx), store.all(), (call) =>
    worstCaseUsd(pricer, call),
  )
  const month = new PeriodClock(ctx.config.timezone).monthOf(Date.now()).start
  engine.seed(
    ctx.db
      .prepare(
        `SELECT api_key_hash, key_hint, tenant, COUNT(*) AS requests, MAX(ts) AS last_ts
           FROM calls WHERE ts >= ? GROUP BY api_key_hash`,
      )
      .all(month) as { api_key_hash: string; key_hint: string; tenant: string; requests: number; last_ts: number }[],
  )
  const e = engine
  const stop = ctx.ledger.onCall((call) => e.observe(call))
  ctx.onClose(stop)
  ctx.setGate(budgetGate(e))
  ctx.budgets = e
  const b = { engine: e, store }
  installed.set(ctx, b)
  return b
}

/** Budget rules from the config and the database, enforced on every proxied call. */
export const budgets: Feature = (ctx) => {
  budgetsOf(ctx)
}
