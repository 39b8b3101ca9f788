import { afterEach, describe, expect, it, vi } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../src/shared/api'
import { BudgetEngine } from '../../src/main/budgets/engine'
import type { Rule } from '../../src/main/budgets/rules'
import type { BudgetAlert } from '../../src/main/budgets/types'
import type { CallRecord } from '../../src/main/ledger/record'
import { openai } from '../../src/main/providers/openai'
import { hashKey } from '../../src/main/proxy/attribution'
import { keyHint } from '../../src/shared/key-hint'
import type { CallContext } from '../../src/main/proxy/gate'

/**
 * The "Budget reached" / "Budget warning" alerts (desktop notifications, the tray) come once per
 * level in the limit's own period: a week is one week even where it straddles a month end, and a
 * rolling window that frees and is reached again is news again.
 */

const KEY = 'sk-team-aaaaaaaaaaaa-0001'
const at = (s: string) => Date.parse(s)

function rule(p: Partial<Rule>): Rule {
  return {
    ...DEFAULT_RULE_OPTIONS, api_key_pattern: 'sk-team-*', daily_limit_usd: null, monthly_limit_usd: null, action: 'block',
    soft_limit_pct: null, source: 'config', created_at: null, ...p,
  }
}

function ctx(ts: number): CallContext {
  return {
    provider: openai, shape: { endpoint: 'chat.completions', model: 'gpt-4o-mini', stream: false, billable: true },
    apiKey: KEY, apiKeyHash: hashKey(KEY), keyHint: keyHint(KEY), tenant: '', agent: '', session: '', ts, body: {}, bodyBytes: 10,
  }
}

/** An engine with `r`, and the level alerts it raises (thresholds under 100% left out). */
function engineWith(r: Rule, now: number): { e: BudgetEngine; seen: string[] } {
  const e = new BudgetEngine('UTC', 1, [r], [], { worstCase: () => 0, expected: () => 0, learn: () => {} }, () => [])
  e.reload(now)
  const seen: string[] = []
  e.onAlert((a: BudgetAlert) => a.threshold_pct === undefined && seen.push(`${a.period} ${a.level} ${a.resets_at}`))
  return { e, seen }
}

/** The machine's clock at `ts` too: what the engine is told and what Date.now() says agree, as in the proxy. */
function clockAt(ts: number): number {
  vi.setSystemTime(ts)
  return ts
}

/** A call at `ts`: admitted (or refused) and, when admitted, recorded at `cost`. */
function call(e: BudgetEngine, ts: number, cost: number): boolean {
  clockAt(ts)
  const d = e.admit(ctx(ts), ts)
  if (d.refuse) return false
  d.settle?.()
  e.observe({
    ts, provider: 'openai', model: 'gpt-4o-mini', api_key_hash: hashKey(KEY), key_hint: keyHint(KEY), tenant: '', agent: '',
    session: '', cost_usd: cost, status: 200, input_tokens: 0, output_tokens: 0,
  } as CallRecord, ts)
  return true
}

describe('budget level alerts, once per the limit’s own period', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('a weekly limit reached in a week that straddles a month end is announced once that week, and again the next week', () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const { e, seen } = engineWith(rule({ weekly_limit_usd: 5, action: 'warn' }), clockAt(at('2026-01-28T10:00:00Z')))
    call(e, at('2026-01-28T10:00:00Z'), 5)
    expect(seen).toEqual(['weekly warning 2026-02-02T00:00:00.000Z'])
    // February 1st: a new month, the same week (Mon Jan 26 - Mon Feb 2), still over its limit.
    call(e, at('2026-02-01T09:00:00Z'), 1)
    expect(seen).toHaveLength(1)
    // The next week: reached again, announced again.
    call(e, at('2026-02-03T09:00:00Z'), 6)
    expect(seen).toEqual(['weekly warning 2026-02-02T00:00:00.000Z', 'weekly warning 2026-02-09T00:00:00.000Z'])
  })

  it('a rolling window reached, freed and reached again in the same month is announced each time', () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const { e, seen } = engineWith(rule({ window_hours: 5, window_limit_usd: 5 }), clockAt(at('2026-03-10T08:00:00Z')))
    expect(call(e, at('2026-03-10T08:00:00Z'), 5)).toBe(true)
    expect(seen).toEqual(['window blocking 2026-03-10T13:01:00.000Z'])
    // Refused while it is reached: no second alert.
    expect(call(e, at('2026-03-10T09:00:00Z'), 0)).toBe(false)
    expect(seen).toHaveLength(1)
    // Freed at 13:01, reached again at 14:00 (the same day and month): news again.
    expect(call(e, at('2026-03-10T14:00:00Z'), 5)).toBe(true)
    expect(seen).toEqual(['window blocking 2026-03-10T13:01:00.000Z', 'window blocking 2026-03-10T19:01:00.000Z'])
  })
})
