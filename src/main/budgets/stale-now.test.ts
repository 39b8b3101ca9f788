import { describe, expect, it } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../shared/api'
import { budgetsOverview } from '../dashboard/budgets'
import type { CallRecord } from '../ledger/record'
import { SpendTracker } from '../ledger/spend'
import { openai } from '../providers/openai'
import { hashKey } from '../proxy/attribution'
import { keyHint } from '../../shared/key-hint'
import type { CallContext } from '../proxy/gate'
import { BudgetEngine } from './engine'
import type { Rule } from './rules'

/**
 * A read of the meters timed a moment before the period they have already rolled into: the budgets
 * API's answer, whose time is taken before it awaits a team server's ingested spend (calls go on
 * meanwhile), or any time after the wall clock stepped back a few seconds across midnight (an NTP
 * correction). A meter's day, week and month rolled back to the period that had ended, at $0, and
 * forward again at $0 with the next call: the new period's spend so far was forgotten, and a key
 * that had spent its daily (or monthly) limit was let through again.
 */
const KEY = 'sk-team-aaaaaaaaaaaa-0001'
const at = (s: string) => Date.parse(s)

function rule(p: Partial<Rule>): Rule {
  return {
    ...DEFAULT_RULE_OPTIONS,
    api_key_pattern: 'sk-team-*', daily_limit_usd: null, monthly_limit_usd: null, action: 'block', soft_limit_pct: null,
    source: 'config', created_at: null, ...p,
  }
}

function ctx(ts: number): CallContext {
  return {
    provider: openai,
    shape: { endpoint: 'chat.completions', model: 'gpt-4o-mini', stream: false, billable: true },
    apiKey: KEY, apiKeyHash: hashKey(KEY), keyHint: keyHint(KEY), tenant: '', agent: '', session: '',
    ts, body: {}, bodyBytes: 10,
  }
}

function spend(engine: BudgetEngine, ts: number, cost: number): void {
  engine.admit(ctx(ts), ts).settle?.()
  engine.observe({
    ts, provider: 'openai', model: 'gpt-4o-mini', api_key_hash: hashKey(KEY), key_hint: keyHint(KEY),
    tenant: '', agent: '', session: '', cost_usd: cost, status: 200, input_tokens: 0, output_tokens: 0,
  } as CallRecord, ts)
}

describe('a read of the meters timed just before the period they rolled into', () => {
  for (const c of [
    { name: 'a daily limit, at midnight', r: { daily_limit_usd: 1 }, spent: '2026-03-10T00:00:05Z', read: '2026-03-09T23:59:58Z', next: '2026-03-10T00:00:20Z', period: 'daily' },
    { name: 'a monthly limit, at the month end', r: { monthly_limit_usd: 1 }, spent: '2026-04-01T00:00:05Z', read: '2026-03-31T23:59:58Z', next: '2026-04-01T00:00:20Z', period: 'monthly' },
    { name: 'a weekly limit, at the week start', r: { weekly_limit_usd: 1 }, spent: '2026-03-09T00:00:05Z', read: '2026-03-08T23:59:58Z', next: '2026-03-09T00:00:20Z', period: 'weekly' },
  ]) {
    it(`${c.name}: the new period's spend is kept, and the key stays refused`, () => {
      const engine = new BudgetEngine('UTC', 1, [rule(c.r)], [], { worstCase: () => 0, expected: () => 0, learn: () => {} }, () => [])
      engine.reload(at(c.spent) - 1000)
      spend(engine, at(c.spent), 1)
      expect(engine.admit(ctx(at(c.spent) + 1000), at(c.spent) + 1000).refuse?.state?.period).toBe(c.period)
      // The budgets API's answer, timed a moment before that period began.
      const overview = budgetsOverview(engine, new SpendTracker('UTC'), null, at(c.read))
      expect(overview.rules[0].windows[0]).toMatchObject({ period: c.period, spent_usd: 1 })
      const d = engine.admit(ctx(at(c.next)), at(c.next))
      expect(d.refuse?.state).toMatchObject({ period: c.period, spent: 1 })
    })
  }

  it("today's and this month's spend (the budgets API's overall, the tray, the API keys) are kept too", () => {
    const engine = new BudgetEngine('UTC', 1, [rule({ daily_limit_usd: 1 })], [], { worstCase: () => 0, expected: () => 0, learn: () => {} }, () => [])
    const spent = new SpendTracker('UTC')
    spent.add(hashKey(KEY), at('2026-04-01T00:00:05Z'), 0.25, at('2026-04-01T00:00:05Z'))
    budgetsOverview(engine, spent, null, at('2026-03-31T23:59:58Z'))
    const overall = budgetsOverview(engine, spent, null, at('2026-04-01T00:00:20Z')).overall
    expect(overall.map((o) => [o.period, o.spent_usd])).toEqual([['daily', 0.25], ['monthly', 0.25]])
    expect(spent.key(hashKey(KEY), at('2026-04-01T00:00:20Z'))).toEqual({ day: 0.25, month: 0.25 })
  })

  it("overall's resets_at and forecast are those of the day and month its figures are, never a time before them", () => {
    // The answer's time is taken before it awaits a team server's ingested spend; a call at 00:00:05
    // meanwhile rolls the totals into April 1st. The figures are April 1st's: their day ends at
    // midnight after it, not at the midnight that call came after (gone before the answer is sent).
    const engine = new BudgetEngine('UTC', 1, [rule({ daily_limit_usd: 1 })], [], { worstCase: () => 0, expected: () => 0, learn: () => {} }, () => [])
    const spent = new SpendTracker('UTC')
    spent.add(hashKey(KEY), at('2026-04-01T00:00:05Z'), 0.25, at('2026-04-01T00:00:05Z'))
    const overall = budgetsOverview(engine, spent, null, at('2026-03-31T23:59:58Z')).overall
    expect(overall.map((o) => [o.period, o.spent_usd, o.resets_at])).toEqual([
      ['daily', 0.25, '2026-04-02T00:00:00.000Z'],
      ['monthly', 0.25, '2026-05-01T00:00:00.000Z'],
    ])
    for (const o of overall) {
      // The pace of a period an hour old at most (as read a moment after it began), projected to its own end.
      expect(o.burn_rate_usd_per_hour).toBeCloseTo(0.25, 12)
      expect(o.projected_usd).toBeGreaterThan(0.25)
      expect(Date.parse(o.resets_at)).toBeGreaterThan(at('2026-04-01T00:00:05Z'))
    }
    // Read in its own day, the same answer.
    expect(budgetsOverview(engine, spent, null, at('2026-04-01T00:00:00Z')).overall).toEqual(overall)
  })

  it("a key's requests this month (the admin API's requests_month) are kept too", () => {
    const engine = new BudgetEngine('UTC', 1, [rule({ daily_limit_usd: 1 })], [], { worstCase: () => 0, expected: () => 0, learn: () => {} }, () => [])
    const observe = (ts: number, now: number) =>
      engine.observe({ ts, provider: 'openai', model: 'gpt-4o-mini', api_key_hash: hashKey(KEY), key_hint: keyHint(KEY), tenant: '', agent: '', session: '', cost_usd: 0.1, status: 200 } as CallRecord, now)
    observe(at('2026-04-01T00:00:05Z'), at('2026-04-01T00:00:05Z'))
    // A call of the month that ended, recorded with a time read before April began.
    observe(at('2026-03-31T23:59:50Z'), at('2026-03-31T23:59:58Z'))
    observe(at('2026-04-01T00:00:20Z'), at('2026-04-01T00:00:20Z'))
    expect(engine.keysThisMonth(at('2026-04-01T00:00:30Z')).map((k) => k.requestsMonth)).toEqual([2])
  })
})
