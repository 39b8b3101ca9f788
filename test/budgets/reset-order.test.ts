import { describe, expect, it } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../src/shared/api'
import { BudgetEngine } from '../../src/main/budgets/engine'
import { Meter } from '../../src/main/budgets/meter'
import type { Rule } from '../../src/main/budgets/rules'
import { PgBudgetState } from '../../src/main/budgets/state/postgres'
import type { ReserveOutcome } from '../../src/main/budgets/state/types'
import type { CallRecord } from '../../src/main/ledger/record'
import { openai } from '../../src/main/providers/openai'
import { hashKey } from '../../src/main/proxy/attribution'
import { keyHint } from '../../src/shared/key-hint'
import type { CallContext } from '../../src/main/proxy/gate'
import { PostgresStore } from '../../src/main/storage/postgres'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { PeriodClock } from '../../src/main/time/zone'
import { usePostgres } from '../support/pg-harness'

/**
 * When several limits of a rule are reached at once, the refusal names the one whose reset is
 * latest: retrying at the announced `resets_at` is admitted, not refused again by another limit.
 * Limits are not ordered by reset: a Monday week can end after the month it began in, and a
 * rolling window of 24 h or more can free after midnight.
 */

const KEY = 'sk-team-aaaaaaaaaaaa-0001'
const at = (s: string) => Date.parse(s)
const iso = (t: number | null | undefined) => (t == null ? t : new Date(t).toISOString())

function rule(p: Partial<Rule>): Rule {
  return {
    ...DEFAULT_RULE_OPTIONS, api_key_pattern: 'sk-team-*', daily_limit_usd: null, monthly_limit_usd: null, action: 'block',
    soft_limit_pct: null, source: 'config', created_at: null, ...p,
  }
}

function ctx(ts: number, session = ''): CallContext {
  return {
    provider: openai, shape: { endpoint: 'chat.completions', model: 'gpt-4o-mini', stream: false, billable: true },
    apiKey: KEY, apiKeyHash: hashKey(KEY), keyHint: keyHint(KEY), tenant: '', agent: '', session, ts, body: {}, bodyBytes: 10,
  }
}

function engineWith(r: Rule, now: number): BudgetEngine {
  const e = new BudgetEngine('UTC', 1, [r], [], { worstCase: () => 0, expected: () => 0, learn: () => {} }, () => [])
  e.reload(now)
  return e
}

/** One admitted call of `cost` at `ts`, recorded by the ledger. */
function spend(e: BudgetEngine, ts: number, cost: number, session = ''): void {
  e.admit(ctx(ts, session), ts).settle?.()
  e.observe({
    ts, provider: 'openai', model: 'gpt-4o-mini', api_key_hash: hashKey(KEY), key_hint: keyHint(KEY), tenant: '', agent: '',
    session, cost_usd: cost, status: 200, input_tokens: 0, output_tokens: 0,
  } as CallRecord, ts)
}

const CASES = [
  {
    name: 'monthly and weekly reached in a week that straddles the month end: the week, which ends Mon Feb 2',
    rule: { monthly_limit_usd: 10, weekly_limit_usd: 5 },
    spentAt: '2026-01-28T10:00:00Z', cost: 10, now: '2026-01-28T11:00:00Z',
    period: 'weekly', resetsAt: '2026-02-02T00:00:00.000Z',
  },
  {
    name: 'daily and a 48-hour window reached: the window, which frees two days after the call, not at midnight',
    rule: { daily_limit_usd: 5, window_hours: 48, window_limit_usd: 5 },
    spentAt: '2026-03-10T20:00:00Z', cost: 5, now: '2026-03-10T21:00:00Z',
    period: 'window', resetsAt: '2026-03-12T20:01:00.000Z',
  },
] as const

describe('a refusal with several limits reached names the one that frees last (one instance)', () => {
  for (const c of CASES) {
    it(c.name, () => {
      const e = engineWith(rule(c.rule), at(c.spentAt))
      spend(e, at(c.spentAt), c.cost)
      const d = e.admit(ctx(at(c.now)), at(c.now))
      expect({ period: d.refuse?.state?.period, resetsAt: iso(d.refuse?.state?.resetsAt) }).toEqual({ period: c.period, resetsAt: c.resetsAt })
      const retry = d.refuse!.state!.resetsAt!
      // A moment before it, still refused; at it, admitted.
      expect(e.admit(ctx(retry - 1), retry - 1).refuse).toBeDefined()
      expect(e.admit(ctx(retry), retry).refuse).toBeUndefined()
    })
  }

  it('a session cap reached with a daily limit: the session, which never resets', () => {
    const e = engineWith(rule({ daily_limit_usd: 5, session_limit_usd: 5 }), at('2026-03-10T20:00:00Z'))
    spend(e, at('2026-03-10T20:00:00Z'), 5, 's1')
    const now = at('2026-03-10T21:00:00Z')
    expect(e.admit(ctx(now, 's1'), now).refuse?.state).toMatchObject({ period: 'session', resetsAt: null })
  })
})

describe('the same on PostgreSQL: the shared spend rows refuse with the latest reset', () => {
  const h = usePostgres({ upstream: false })

  async function pgState(): Promise<PgBudgetState> {
    const store = new PostgresStore(h.database())
    await migratePostgres(store)
    const state = new PgBudgetState(store)
    h.onTeardown(async () => {
      await state.close()
      await store.close()
    })
    return state
  }

  /** Asks the state as the engine does, with the periods of a meter that has seen nothing (another instance's spend). */
  function reserve(state: PgBudgetState, r: Rule, now: number, amount = 0): Promise<ReserveOutcome> {
    const meter = new Meter(r, new PeriodClock('UTC', 1))
    return Promise.resolve(state.reserve({ rule: r, meter, keyHash: hashKey(KEY), session: '', ts: now, periods: meter.periods(now), amount }))
  }

  for (const c of CASES) {
    it(c.name, async () => {
      const state = await pgState()
      const r = rule(c.rule)
      const first = await reserve(state, r, at(c.spentAt))
      expect(first.ok).toBe(true)
      if (first.ok) first.reservation.settle(c.cost)
      expect(await state.settled()).toBe(true)
      const o = await reserve(state, r, at(c.now))
      expect(o.ok).toBe(false)
      if (o.ok) return
      expect({ kind: o.kind, period: o.state.period, resetsAt: iso(o.state.resetsAt) }).toEqual({ kind: 'reached', period: c.period, resetsAt: c.resetsAt })
      // Asked again within the remembered answer's lifetime (no round trip): the same limit.
      const again = await reserve(state, r, at(c.now))
      expect(again.ok ? null : { period: again.state.period, resetsAt: iso(again.state.resetsAt) }).toEqual({ period: c.period, resetsAt: c.resetsAt })
      const retry = await reserve(state, r, at(c.resetsAt))
      expect(retry.ok).toBe(true)
      if (retry.ok) retry.reservation.release()
      expect(await state.settled()).toBe(true)
    }, 60_000)
  }
})
