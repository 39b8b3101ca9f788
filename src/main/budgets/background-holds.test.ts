import { describe, expect, it } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../shared/api'
import { openai } from '../providers/openai'
import { hashKey, keyHint } from '../proxy/attribution'
import type { CallContext } from '../proxy/gate'
import { BACKGROUND_HOLD_MS } from './background-holds'
import { BudgetEngine } from './engine'
import type { Rule } from './rules'

const KEY = 'sk-team-aaaaaaaaaaaa-0001'
const rule: Rule = {
  ...DEFAULT_RULE_OPTIONS,
  api_key_pattern: 'sk-team-*', daily_limit_usd: 1, monthly_limit_usd: null, action: 'block', soft_limit_pct: null, source: 'config', created_at: null,
}

function ctx(ts: number): CallContext {
  return {
    provider: openai, shape: { endpoint: 'responses', model: 'o3-pro', stream: false, billable: true },
    apiKey: KEY, apiKeyHash: hashKey(KEY), keyHint: keyHint(KEY), tenant: '', agent: '', session: '', ts, body: { background: true }, bodyBytes: 10,
  }
}

describe('a background response holds its reservation', () => {
  const setup = () => {
    const engine = new BudgetEngine('UTC', 1, [rule], [], { worstCase: () => 0, expected: () => 1, learn: () => {} })
    engine.reload()
    return engine
  }
  // Midday UTC: the hour after stays in the same day.
  const now = Date.UTC(2026, 2, 10, 12)

  it('until its bound, when a response never read stops holding', () => {
    const engine = setup()
    const first = engine.admit(ctx(now), now)
    first.settle!(0.01, { provider: 'openai', responseId: 'resp_1' })
    expect(engine.admit(ctx(now + 1), now + 1).refuse).toMatchObject({ kind: 'reserved', reservedUsd: 1 })
    expect(engine.admit(ctx(now + BACKGROUND_HOLD_MS - 1), now + BACKGROUND_HOLD_MS - 1).refuse?.kind).toBe('reserved')
    expect(engine.admit(ctx(now + BACKGROUND_HOLD_MS), now + BACKGROUND_HOLD_MS).refuse).toBeUndefined()
  })

  it('until its call\'s real usage is taken (its cost move, here or on another instance); not when it is re-priced', () => {
    const engine = setup()
    engine.admit(ctx(now), now).settle!(0.01, { provider: 'openai', responseId: 'resp_2' })
    expect(engine.admit(ctx(now + 1), now + 1).refuse?.kind).toBe('reserved')
    const move = { api_key_hash: hashKey(KEY), ts: now, provider: 'openai', model: 'o3-pro', agent: '', tenant: '', session: '', delta: 0.2 }
    engine.adjust([move], now + 2)
    expect(engine.admit(ctx(now + 3), now + 3).refuse?.kind).toBe('reserved')
    engine.adjust([{ ...move, usage_in: true }], now + 4)
    expect(engine.admit(ctx(now + 5), now + 5).refuse).toBeUndefined()
  })
  it('ends only the hold of the response whose usage came, when a key started jobs in the same millisecond', () => {
    const engine = new BudgetEngine('UTC', 1, [{ ...rule, daily_limit_usd: 3 }], [], { worstCase: () => 0, expected: () => 1, learn: () => {} })
    engine.reload()
    // Two jobs started together (Promise.all): the same arrival millisecond, two response ids.
    engine.admit(ctx(now), now).settle!(0.01, { provider: 'openai', responseId: 'resp_A' })
    engine.admit(ctx(now), now).settle!(0.01, { provider: 'openai', responseId: 'resp_B' })
    expect(engine.holds.size).toBe(2)
    // resp_A's result is in (its creating call's cost moves, here or on another instance).
    const move = { api_key_hash: hashKey(KEY), ts: now, provider: 'openai', model: 'o3-pro', agent: '', tenant: '', session: '', delta: 0.2, usage_in: true }
    engine.adjust([{ ...move, response_id: 'resp_A' }], now + 2)
    // resp_B still runs: it still holds its $1.
    expect(engine.holds.size).toBe(1)
    // A job whose real cost is its estimate moves no money, and still ends its hold.
    engine.adjust([{ ...move, delta: 0, response_id: 'resp_B' }], now + 5)
    expect(engine.holds.size).toBe(0)
  })
})
