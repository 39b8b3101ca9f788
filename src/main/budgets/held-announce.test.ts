import { describe, expect, it } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../shared/api'
import { keyHint } from '../../shared/key-hint'
import type { CallRecord } from '../ledger/record'
import { hashKey } from '../proxy/attribution'
import { BudgetEngine } from './engine'
import type { HistoryRow } from './meter-book'
import type { Rule } from './rules'

const KEY = 'sk-held-aaaaaaaaaaaa-0001'
const T = (iso: string) => Date.parse(iso)

function rule(p: Partial<Rule>): Rule {
  return {
    ...DEFAULT_RULE_OPTIONS,
    api_key_pattern: '*', daily_limit_usd: 10, monthly_limit_usd: null, action: 'warn', soft_limit_pct: null,
    source: 'config', created_at: null, ...p,
  }
}

/** An engine in UTC, the thresholds it announces as "period pct", and a call of `cost` stamped `ts` recorded at `now`. */
function setup(config: Rule[], runtime: Rule[] = []) {
  // What a reload reads back: the calls recorded.
  const history: HistoryRow[] = []
  const engine = new BudgetEngine('UTC', 1, config, runtime, { worstCase: () => 0, expected: () => 0, learn: () => {} }, () => history)
  const seen: string[] = []
  engine.onThreshold((e) => seen.push(`${e.state.period} ${e.pct}`))
  const record = (ts: number, cost: number, now: number) => {
    const row = { api_key_hash: hashKey(KEY), key_hint: keyHint(KEY), provider: 'openai', model: 'gpt-4o-mini', requested: null, agent: '', tenant: '', session: '' }
    history.push({ ...row, t: ts - (ts % 60_000), cost, tokens: 0, requests: 0, last: ts })
    engine.observe({ ts, provider: 'openai', model: 'gpt-4o-mini', api_key_hash: hashKey(KEY), key_hint: keyHint(KEY), tenant: '', agent: '', session: '', cost_usd: cost, status: 200, input_tokens: 0, output_tokens: 0 } as CallRecord, now)
  }
  return { engine, seen, record }
}

describe('BudgetEngine.announceHeld', () => {
  it('announces the thresholds spend kept for a day crosses when it starts, once', () => {
    const { engine, seen, record } = setup([rule({})])
    record(T('2026-03-15T00:10:00Z'), 8.5, T('2026-03-14T23:50:00Z'))
    engine.announceHeld(T('2026-03-14T23:55:00Z'))
    expect(seen).toEqual([])
    engine.announceHeld(T('2026-03-15T00:00:01Z'))
    expect(seen).toEqual(['daily 0.5', 'daily 0.8'])
    engine.announceHeld(T('2026-03-15T01:00:00Z'))
    expect(seen).toEqual(['daily 0.5', 'daily 0.8'])
  })

  it("leaves a day's spend with none kept for it to the calls, as before", () => {
    const { engine, seen, record } = setup([rule({})])
    record(T('2026-03-15T00:10:00Z'), 6, T('2026-03-15T00:10:00Z'))
    expect(seen).toEqual(['daily 0.5'])
    engine.announceHeld(T('2026-03-15T01:00:00Z'))
    expect(seen).toEqual(['daily 0.5'])
  })

  it('not under a rule set after the day began: its change read the held spend as announced', () => {
    const { engine, seen, record } = setup([], [rule({ source: 'runtime', daily_limit_usd: 100, created_at: T('2026-03-14T12:00:00Z') })])
    record(T('2026-03-15T00:10:00Z'), 6, T('2026-03-14T23:50:00Z'))
    // Lowered at 00:30, the day's $6 already over 50% of $10: taken as announced, as any spend a rule change reads.
    engine.setRuntimeRules([rule({ source: 'runtime', daily_limit_usd: 10, created_at: T('2026-03-15T00:30:00Z') })], T('2026-03-15T00:30:00Z'))
    engine.announceHeld(T('2026-03-15T00:31:00Z'))
    expect(seen).toEqual([])
    // A rule set before the day began has them announced.
    engine.setRuntimeRules([rule({ source: 'runtime', daily_limit_usd: 11, created_at: T('2026-03-14T23:00:00Z') })], T('2026-03-15T00:32:00Z'))
    engine.announceHeld(T('2026-03-15T00:33:00Z'))
    expect(seen).toEqual(['daily 0.5'])
  })
})
