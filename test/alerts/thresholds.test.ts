import { describe, expect, it } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../src/shared/api'
import { claimId } from '../../src/main/alerts/claims'
import type { CallRecord } from '../../src/main/ledger/record'
import { openai } from '../../src/main/providers/openai'
import { hashKey } from '../../src/main/proxy/attribution'
import { keyHint } from '../../src/shared/key-hint'
import type { CallContext } from '../../src/main/proxy/gate'
import type { ThresholdEvent } from '../../src/main/budgets/announcer'
import { BudgetEngine } from '../../src/main/budgets/engine'
import type { HistoryRow } from '../../src/main/budgets/meter-book'
import type { Rule } from '../../src/main/budgets/rules'

// Which `alert_at_pct` thresholds the budget engine announces (webhooks, desktop), and when again.

const KEY = 'sk-team-aaaaaaaaaaaa-0001'
const NOW = Date.UTC(2026, 2, 10, 12)

function rule(p: Partial<Rule>): Rule {
  return {
    ...DEFAULT_RULE_OPTIONS,
    api_key_pattern: 'sk-team-*', daily_limit_usd: 1, monthly_limit_usd: null, action: 'warn', soft_limit_pct: null,
    source: 'runtime', created_at: null, ...p,
  } as Rule
}

function ctx(ts: number): CallContext {
  return {
    provider: openai,
    shape: { endpoint: 'chat.completions', model: 'gpt-4o-mini', stream: false, billable: true },
    apiKey: KEY, apiKeyHash: hashKey(KEY), keyHint: keyHint(KEY), tenant: '', agent: '', session: '',
    ts, body: {}, bodyBytes: 10,
  } as CallContext
}

function row(cost: number, t: number): HistoryRow {
  return { api_key_hash: hashKey(KEY), key_hint: keyHint(KEY), provider: 'openai', model: 'gpt-4o-mini', requested: null, agent: '', tenant: '', session: '', t, cost, tokens: 0, requests: 0, last: t }
}

/** The engine over a ledger of its own: `history` holds the recorded calls a reload reads back. */
function make(runtime: Rule[], history: HistoryRow[] = []) {
  const engine = new BudgetEngine('UTC', 1, [], runtime, { worstCase: () => 0, expected: () => 0, learn: () => {} }, () => history)
  engine.reload(NOW)
  const seen: ThresholdEvent[] = []
  engine.onThreshold((e) => seen.push(e))
  return { engine, seen, history }
}

/** A call admitted, answered and recorded at `ts`, as the proxy and the ledger do. */
function call({ engine, history }: { engine: BudgetEngine; history: HistoryRow[] }, cost: number, ts: number): void {
  engine.admit(ctx(ts), ts).settle!()
  history.push(row(cost, ts))
  engine.observe({
    ts, provider: 'openai', model: 'gpt-4o-mini', api_key_hash: hashKey(KEY), key_hint: keyHint(KEY),
    tenant: '', agent: '', session: '', cost_usd: cost, status: 200, input_tokens: 0, output_tokens: 0,
  } as unknown as CallRecord, ts)
}

const pctAndLimit = (seen: ThresholdEvent[]) => seen.map((e) => [e.pct, e.state.limit])

describe('threshold alerts and limit changes', () => {
  it('raising a rule\'s limit re-arms its thresholds: the new limit\'s are announced the same day', () => {
    const b = make([rule({ daily_limit_usd: 10 })])
    call(b, 9, NOW) // 90% of $10
    expect(pctAndLimit(b.seen)).toEqual([[0.5, 10], [0.8, 10], [0.9, 10]])
    // The admin API replaces the rule with a $100 daily limit: $9 is 9% of it, nothing crossed.
    b.engine.setRuntimeRules([rule({ daily_limit_usd: 100 })], NOW + 1)
    expect(b.seen).toHaveLength(3)
    for (let i = 0; i < 82; i++) call(b, 1, NOW + 1000 + i) // $91 of $100
    expect(pctAndLimit(b.seen.slice(3))).toEqual([[0.5, 100], [0.8, 100], [0.9, 100]])
    // PostgreSQL's claim of each is its own too (one instance may have claimed the old limit's).
    const hook = { url: 'http://127.0.0.1:9/hook', format: 'json' as const }
    expect(claimId(b.seen[3], hook)).not.toBe(claimId(b.seen[0], hook))
  })

  it('a rule change with the same limits, or a restart, announces nothing again', () => {
    const b = make([rule({ daily_limit_usd: 10 })])
    call(b, 9, NOW)
    expect(b.seen).toHaveLength(3)
    // Another field changes (a reload of every meter), the limit stays.
    b.engine.setRuntimeRules([rule({ daily_limit_usd: 10, soft_limit_pct: 0.95 })], NOW + 1)
    call(b, 0.5, NOW + 2) // $9.50: no threshold between 90% and 100%
    expect(b.seen).toHaveLength(3)

    // A restart: the meters from the ledger's $9.50, the thresholds it crossed not announced again.
    const after = make([rule({ daily_limit_usd: 10 })], [...b.history])
    call(after, 0.25, NOW + 3)
    expect(after.seen).toEqual([])
    call(after, 0.25, NOW + 4) // $10: 100%, the only one not crossed before
    expect(pctAndLimit(after.seen)).toEqual([[1, 10]])
  })
})

describe('threshold alerts of rolling windows', () => {
  const hour = 3600_000

  it('a broader rule\'s window re-arms once its spend has fallen back, though a more specific rule decides the key\'s calls', () => {
    // sk-team-* decides the key's calls; sk-* (at most $1 in any hour) counts them too.
    const b = make([
      rule({ api_key_pattern: 'sk-team-*', daily_limit_usd: 1000 }),
      rule({ api_key_pattern: 'sk-*', daily_limit_usd: null, window_hours: 1, window_limit_usd: 1 }),
    ])
    const seen = () => b.seen.map((e) => `${e.rule.api_key_pattern} ${e.state.period} ${e.pct}`)
    call(b, 0.95, NOW)
    expect(seen()).toEqual(['sk-* window 0.5', 'sk-* window 0.8', 'sk-* window 0.9'])
    // Three hours later the window is empty; $0.60 in it crosses 50% again.
    call(b, 0.6, NOW + 3 * hour)
    expect(seen().slice(3)).toEqual(['sk-* window 0.5'])
    // Within the window, spend still over 50%: not again.
    call(b, 0.1, NOW + 3 * hour + 60_000)
    expect(seen()).toHaveLength(4)
  })

  it('the deciding rule\'s own window re-arms the same way', () => {
    const b = make([rule({ api_key_pattern: 'sk-team-*', daily_limit_usd: null, window_hours: 1, window_limit_usd: 1 })])
    call(b, 0.85, NOW)
    expect(b.seen.map((e) => e.pct)).toEqual([0.5, 0.8])
    call(b, 0.55, NOW + 2 * hour)
    expect(b.seen.map((e) => e.pct)).toEqual([0.5, 0.8, 0.5])
  })
})
