import { describe, expect, it } from 'vitest'
import type { CallRecord } from '../ledger/record'
import { SpendTracker } from '../ledger/spend'
import { openai } from '../providers/openai'
import { hashKey, keyHint } from '../proxy/attribution'
import type { CallContext } from '../proxy/gate'
import { startOfNextDay } from '../time/zone'
import { BudgetEngine } from './engine'
import { budgetGate, formatUsd, warningText } from './gate'
import type { Rule } from './rules'
import type { BudgetAlert } from './types'

const TZ = 'Europe/Berlin'
const KEY = 'sk-team-aaaaaaaaaaaa-0001'

function rule(p: Partial<Rule>): Rule {
  return { api_key_pattern: 'sk-team-*', daily_limit_usd: 1, monthly_limit_usd: null, action: 'block', soft_limit_pct: null, source: 'config', created_at: null, ...p }
}

function ctx(key = KEY): CallContext {
  return {
    provider: openai,
    shape: { endpoint: 'chat.completions', model: 'gpt-4o-mini', stream: false, billable: true },
    apiKey: key, apiKeyHash: hashKey(key), keyHint: keyHint(key), tenant: '', agent: '', session: '',
    ts: Date.now(), body: {}, bodyBytes: 10,
  }
}

function record(spend: SpendTracker, engine: BudgetEngine, cost: number, key = KEY): void {
  const call = { ts: Date.now(), api_key_hash: hashKey(key), key_hint: keyHint(key), tenant: '', cost_usd: cost, status: 200 } as CallRecord
  spend.add(call.api_key_hash, call.ts, cost)
  engine.observe(call)
}

function setup(rules: Rule[], worst = 0.1) {
  const spend = new SpendTracker(TZ)
  const engine = new BudgetEngine(spend, TZ, rules, [], () => worst)
  return { spend, engine }
}

describe('BudgetEngine', () => {
  it('reserves the worst case of calls in flight and releases it on settle', () => {
    const { engine } = setup([rule({ daily_limit_usd: 0.25 })], 0.1)
    const a = engine.admit(ctx())
    const b = engine.admit(ctx())
    expect(a.refuse).toBeUndefined()
    expect(b.refuse).toBeUndefined()
    const c = engine.admit(ctx())
    expect(c.refuse).toMatchObject({ kind: 'worst_case', worstCaseUsd: 0.1 })
    expect(c.refuse?.reservedUsd).toBeCloseTo(0.2, 12)
    a.settle!()
    a.settle!() // settling twice releases once
    expect(engine.admit(ctx()).refuse).toBeUndefined()
    expect(engine.admit(ctx()).refuse?.kind).toBe('worst_case')
  })

  it('refuses once spend reaches the limit, naming the period and when it resets', () => {
    const { spend, engine } = setup([rule({ daily_limit_usd: 0.5 })], 0)
    record(spend, engine, 0.5)
    const d = engine.admit(ctx(), Date.now())
    expect(d.refuse).toMatchObject({ kind: 'reached', state: { period: 'daily', limit: 0.5, spent: 0.5 } })
    expect(d.refuse!.state.resetsAt).toBe(startOfNextDay(Date.now(), TZ))
  })

  it('warn rules never refuse and never reserve', () => {
    const { spend, engine } = setup([rule({ action: 'warn', daily_limit_usd: 0.1 })], 5)
    expect(engine.admit(ctx())).toEqual({ warnings: [] })
    record(spend, engine, 0.2)
    const d = engine.admit(ctx())
    expect(d.refuse).toBeUndefined()
    expect(d.settle).toBeUndefined()
    expect(d.warnings.map((w) => w.state.period)).toEqual(['daily'])
  })

  it('alerts: warning from soft_limit_pct, blocking at the limit; onAlert once per rule, key, period and level', () => {
    const { spend, engine } = setup([rule({ daily_limit_usd: 1, monthly_limit_usd: 10, soft_limit_pct: 0.5 })], 0)
    const seen: BudgetAlert[] = []
    engine.onAlert((a) => seen.push(a))
    // As in the proxy, the key is admitted (with its raw key) before its calls are recorded.
    engine.admit(ctx()).settle?.()
    record(spend, engine, 0.2)
    expect(engine.alerts()).toEqual([])
    record(spend, engine, 0.4)
    record(spend, engine, 0.1)
    expect(seen.map((a) => [a.period, a.level])).toEqual([['daily', 'warning']])
    record(spend, engine, 0.3)
    expect(seen.map((a) => [a.period, a.level])).toEqual([['daily', 'warning'], ['daily', 'blocking']])
    const alerts = engine.alerts()
    expect(alerts).toHaveLength(1)
    expect(alerts[0]).toMatchObject({ api_key_pattern: 'sk-team-*', api_key_hash: hashKey(KEY), key_hint: keyHint(KEY), period: 'daily', level: 'blocking', limit_usd: 1 })
    expect(alerts[0].spent_usd).toBeCloseTo(1, 12)
    // Refused calls after that raise nothing new.
    engine.admit(ctx())
    expect(seen).toHaveLength(2)
  })

  it('runtime rules replace the index at once; the per-key memo follows', () => {
    const { engine } = setup([rule({ daily_limit_usd: 100 })], 0)
    expect(engine.admit(ctx()).refuse).toBeUndefined()
    engine.setRuntimeRules([rule({ api_key_pattern: KEY, daily_limit_usd: 0, source: 'runtime', created_at: 1 })])
    expect(engine.admit(ctx()).refuse?.rule.api_key_pattern).toBe(KEY)
    engine.setRuntimeRules([])
    expect(engine.admit(ctx()).refuse).toBeUndefined()
    expect(engine.ruleFor(hashKey(KEY))?.api_key_pattern).toBe('sk-team-*')
  })
})

describe('gate', () => {
  it('turns a refusal into the contract 429', () => {
    const { engine } = setup([rule({ daily_limit_usd: 0 })])
    const a = budgetGate(engine).admit(ctx())
    expect(a.refuse?.status).toBe(429)
    expect(a.refuse?.headers['x-should-retry']).toBe('false')
    expect(Number(a.refuse?.headers['retry-after'])).toBeGreaterThan(0)
    expect(a.refuse?.reason).toBe('budget_exceeded')
    expect(a.refuse?.body).toMatchObject({ error: { type: 'budget_exceeded', api_key_pattern: 'sk-team-*', period: 'daily', limit_usd: 0, spent_usd: 0 } })
  })

  it('formats warning headers with 2 decimals, more when the limit needs them, header-safe', () => {
    expect(formatUsd(4.123, 5)).toBe('4.12')
    expect(formatUsd(0.0041, 0.005)).toBe('0.004')
    expect(warningText('sk-*', { period: 'daily', spent: 4.12, limit: 5, start: 0, resetsAt: 0 })).toBe('sk-* daily 4.12/5.00 USD')
    expect(warningText('sk-\u00e9*', { period: 'monthly', spent: 1, limit: 2, start: 0, resetsAt: 0 })).toBe('sk-?* monthly 1.00/2.00 USD')
  })
})
