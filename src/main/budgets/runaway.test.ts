import { describe, expect, it } from 'vitest'
import type { CallRecord } from '../ledger/record'
import { anthropic } from '../providers/anthropic'
import type { CallContext } from '../proxy/gate'
import { BudgetEngine } from './engine'
import { budgetGate } from './gate'
import { RunawayDetector, tailHash } from './runaway'

const msg = (role: string, text: string) => ({ role, content: text })

function ctx(session: string, body: unknown = {}): CallContext {
  return {
    provider: anthropic,
    shape: { endpoint: 'messages', model: 'claude-sonnet-4-5', stream: true, billable: true },
    apiKey: 'sk-ant-x', apiKeyHash: 'h'.repeat(64), keyHint: 'sk-…', tenant: '', agent: 'claude-code', session,
    ts: Date.now(), body, bodyBytes: 10,
  }
}

describe('tailHash', () => {
  it('is the same for a growing conversation that ends the same way, different when the end changes, none for one-shot calls', () => {
    const a = { messages: [msg('user', 'task'), msg('assistant', 'run x'), msg('user', 'error')] }
    const b = { messages: [msg('user', 'task'), msg('assistant', 'run x'), msg('user', 'error'), msg('assistant', 'run x'), msg('user', 'error')] }
    const c = { messages: [...b.messages, msg('assistant', 'run y'), msg('user', 'ok')] }
    expect(tailHash(a)).toBe(tailHash(b))
    expect(tailHash(c)).not.toBe(tailHash(b))
    expect(tailHash({ messages: [msg('user', 'hi')] })).toBeNull()
    expect(tailHash({ contents: a.messages })).toBe(tailHash(a))
  })
})

describe('session spend rate', () => {
  it('block: a session over usd_per_minute gets a transient 429 rate_limited for a minute', () => {
    const detector = new RunawayDetector({ loop: { action: 'off', repeats: 5, windowMinutes: 10 }, spendRate: { action: 'block', usdPerMinute: 1 } })
    const engine = new BudgetEngine('UTC', 1, [], [], { worstCase: () => 0, expected: () => 0, learn: () => {} })
    const gate = budgetGate(engine, { detector, windowMinutes: 10, usdPerMinute: 1 })
    const now = Date.now()
    expect(gate.admit(ctx('s1')).refuse).toBeUndefined()
    detector.observe({ session: 's1', api_key_hash: 'h'.repeat(64), cost_usd: 1.2 } as CallRecord, now)
    const r = gate.admit(ctx('s1')).refuse
    expect(r).toMatchObject({ status: 429, reason: 'rate_limited', headers: { 'x-should-retry': 'true', 'retry-after': '60' } })
    expect(r?.body).toMatchObject({ error: { type: 'rate_limited', unit: 'session_usd_per_minute', session: 's1', limit: 1 } })
    expect(gate.admit(ctx('s2')).refuse).toBeUndefined()
    expect(detector.check(ctx('s1'), now + 61_000)).toEqual([])
  })
})
