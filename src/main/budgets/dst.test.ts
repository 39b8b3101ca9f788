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

/** Daily and weekly limits at DST changes: each resets at the true next local midnight. */
const KEY = 'sk-team-aaaaaaaaaaaa-0001'
const at = (s: string) => Date.parse(s)
const iso = (t: number | null | undefined) => (t == null ? t : new Date(t).toISOString())

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

function engineWith(tz: string, weekStart: number, r: Rule, now: number): BudgetEngine {
  const engine = new BudgetEngine(tz, weekStart, [r], [], { worstCase: () => 0, expected: () => 0, learn: () => {} }, () => [])
  engine.reload(now)
  return engine
}

function spend(engine: BudgetEngine, ts: number, cost: number): void {
  engine.admit(ctx(ts), ts).settle?.()
  engine.observe({
    ts, provider: 'openai', model: 'gpt-4o-mini', api_key_hash: hashKey(KEY), key_hint: keyHint(KEY),
    tenant: '', agent: '', session: '', cost_usd: cost, status: 200, input_tokens: 0, output_tokens: 0,
  } as CallRecord, ts)
}

/** When the call at `now` is refused, its refusal's period and reset; undefined when admitted. */
function refusal(engine: BudgetEngine, now: number) {
  const d = engine.admit(ctx(now), now)
  d.settle?.()
  return d.refuse ? { period: d.refuse.state?.period, resets_at: iso(d.refuse.state?.resetsAt) } : undefined
}

describe('budget periods at DST changes', () => {
  it('Berlin, 25-hour day: a daily limit reached at 00:30 holds until the next local midnight, 25 hours on', () => {
    const e = engineWith('Europe/Berlin', 1, rule({ daily_limit_usd: 1 }), at('2026-10-24T22:00:00Z'))
    spend(e, at('2026-10-24T22:30:00Z'), 1) // Oct 25 00:30 CEST
    const r = refusal(e, at('2026-10-25T22:30:00Z')) // 24 h later: 23:30 CET, the same local day
    expect(r).toMatchObject({ period: 'daily', resets_at: '2026-10-25T23:00:00.000Z' })
    expect(refusal(e, at('2026-10-25T23:00:00Z'))).toBeUndefined()
  })

  it('Berlin, 23-hour day: the limit resets 23 hours after midnight', () => {
    const e = engineWith('Europe/Berlin', 1, rule({ daily_limit_usd: 1 }), at('2026-03-28T23:00:00Z'))
    spend(e, at('2026-03-28T23:10:00Z'), 1) // Mar 29 00:10 CET
    expect(refusal(e, at('2026-03-29T21:59:59Z'))).toMatchObject({ period: 'daily', resets_at: '2026-03-29T22:00:00.000Z' })
    expect(refusal(e, at('2026-03-29T22:00:00Z'))).toBeUndefined()
  })

  it('Santiago: a limit reached at 23:30 resets at 01:00, the first instant of a day without midnight', () => {
    const e = engineWith('America/Santiago', 1, rule({ daily_limit_usd: 1 }), at('2026-09-05T12:00:00Z'))
    spend(e, at('2026-09-06T03:30:00Z'), 1) // Sep 5 23:30 (-04)
    expect(refusal(e, at('2026-09-06T03:45:00Z'))).toMatchObject({ period: 'daily', resets_at: '2026-09-06T04:00:00.000Z' })
    expect(refusal(e, at('2026-09-06T04:00:00Z'))).toBeUndefined() // Sep 6 01:00 (-03)
  })

  it('New York: a weekly limit from each week_start resets at local midnight across the fall-back', () => {
    // Spend on Thursday 2026-10-29 12:00 EDT, refused an hour later; the change is on Sunday 2026-11-01.
    const resets: Record<number, string | null | undefined> = {}
    for (let ws = 0; ws < 7; ws++) {
      const e = engineWith('America/New_York', ws, rule({ weekly_limit_usd: 1 }), at('2026-10-29T16:00:00Z'))
      spend(e, at('2026-10-29T16:00:00Z'), 1)
      resets[ws] = refusal(e, at('2026-10-29T17:00:00Z'))?.resets_at
    }
    expect(resets).toEqual({
      0: '2026-11-01T04:00:00.000Z', // Sunday 00:00 EDT (the change is at 02:00 that day)
      1: '2026-11-02T05:00:00.000Z', // Monday 00:00 EST
      2: '2026-11-03T05:00:00.000Z',
      3: '2026-11-04T05:00:00.000Z',
      4: '2026-11-05T05:00:00.000Z',
      5: '2026-10-30T04:00:00.000Z', // Friday 00:00 EDT
      6: '2026-10-31T04:00:00.000Z',
    })
  })

  it('a rolling window is a length: 5 hours across the change are 5 hours', () => {
    const e = engineWith('America/New_York', 1, rule({ window_hours: 5, window_limit_usd: 1 }), at('2026-11-01T04:00:00Z'))
    spend(e, at('2026-11-01T05:00:00Z'), 1) // 01:00 EDT
    // 5 hours later is 05:00 EST, not 06:00 by the wall clock: the spend leaves the window then.
    expect(refusal(e, at('2026-11-01T09:59:00Z'))).toMatchObject({ period: 'window' })
    expect(refusal(e, at('2026-11-01T10:01:00Z'))).toBeUndefined()
  })

  it('/api/dashboard/budgets on a 23-hour day: resets_at is the real midnight, the pace is by real hours', () => {
    const e = engineWith('Europe/Berlin', 1, rule({ daily_limit_usd: 10 }), at('2026-03-28T23:00:00Z'))
    spend(e, at('2026-03-29T00:00:00Z'), 1) // 01:00 CET
    const now = at('2026-03-29T09:00:00Z') // 11:00 CEST: 10 real hours into the day, 13 left
    const overview = budgetsOverview(e, new SpendTracker('Europe/Berlin'), null, now)
    const daily = overview.rules[0].windows.find((w) => w.period === 'daily')!
    expect(daily.resets_at).toBe('2026-03-29T22:00:00.000Z')
    expect(daily.burn_rate_usd_per_hour).toBeCloseTo(0.1, 12) // $1 over 10 hours
    expect(daily.projected_usd).toBeCloseTo(1 + 13 * 0.1, 12) // to the end of a 23-hour day
    expect(daily.exhausted_at).toBeNull()
  })
})
