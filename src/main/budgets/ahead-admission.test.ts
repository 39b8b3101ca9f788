import { describe, expect, it } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../shared/api'
import type { CallRecord } from '../ledger/record'
import { openai } from '../providers/openai'
import { hashKey } from '../proxy/attribution'
import { keyHint } from '../../shared/key-hint'
import type { CallContext } from '../proxy/gate'
import { REFUSAL_REASON } from './gate'
import { BudgetEngine } from './engine'
import type { Rule } from './rules'

/**
 * Money a key spent in calls stamped ahead of the clock (an agent's log imported from a machine
 * running fast) is kept for the day its stamp falls in: the key is admitted today, refused once that
 * day comes, and the thresholds it is over then are announced (with the levels) at the key's first
 * call of that day, its refusal included.
 */
const KEY = 'sk-team-aaaaaaaaaaaa-0001'
const at = (s: string) => Date.parse(s)
const RULE: Rule = {
  ...DEFAULT_RULE_OPTIONS,
  api_key_pattern: 'sk-team-*', daily_limit_usd: 10, monthly_limit_usd: null, action: 'block', soft_limit_pct: null,
  source: 'config', created_at: null,
}

const ctx = (ts: number): CallContext => ({
  provider: openai,
  shape: { endpoint: 'chat.completions', model: 'gpt-4o-mini', stream: false, billable: true },
  apiKey: KEY, apiKeyHash: hashKey(KEY), keyHint: keyHint(KEY), tenant: '', agent: '', session: '',
  ts, body: {}, bodyBytes: 10,
})

const call = (ts: number, over: Partial<CallRecord>): CallRecord =>
  ({
    ts, provider: 'openai', model: 'gpt-4o-mini', api_key_hash: hashKey(KEY), key_hint: keyHint(KEY), tenant: '', agent: '',
    session: '', cost_usd: 0, status: 200, input_tokens: 0, output_tokens: 0, source: 'proxy', ...over,
  }) as CallRecord

describe('a daily limit spent by calls stamped ahead of the clock', () => {
  it('is the next day\'s: the key is admitted today, refused when the day comes, and alerted at its first call then', () => {
    const engine = new BudgetEngine('UTC', 1, [RULE], [], { worstCase: () => 0, expected: () => 0, learn: () => {} }, () => [])
    const now = at('2026-03-14T23:50:00Z')
    engine.reload(now)
    const thresholds: string[] = []
    const levels: string[] = []
    engine.onThreshold((e) => thresholds.push(`${e.state.period} ${e.pct}`))
    engine.onAlert((a) => levels.push(a.level))
    engine.observe(call(at('2026-03-14T23:40:00Z'), { cost_usd: 1 }), now)
    engine.observe(call(at('2026-03-15T00:10:00Z'), { cost_usd: 12, source: 'import' }), now)
    expect(engine.admit(ctx(now + 1000), now + 1000).refuse).toBeUndefined()
    expect(thresholds).toEqual([])
    const next = at('2026-03-15T00:20:00Z')
    expect(engine.alerts(next).map((a) => a.level)).toEqual(['blocking'])
    const d = engine.admit(ctx(next), next)
    expect(d.refuse?.state).toMatchObject({ period: 'daily', spent: 12, limit: 10 })
    engine.observe(call(next, { status: 429, error: REFUSAL_REASON }), next)
    expect(thresholds).toEqual(['daily 0.5', 'daily 0.8', 'daily 0.9', 'daily 1'])
    expect(levels).toContain('blocking')
  })
})
