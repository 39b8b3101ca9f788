import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../src/shared/api'
import { BudgetEngine } from '../../src/main/budgets/engine'
import { LocalHistory } from '../../src/main/budgets/local-history'
import { Meter } from '../../src/main/budgets/meter'
import type { Rule } from '../../src/main/budgets/rules'
import { SESSION_HISTORY_SQL } from '../../src/main/budgets/shared-history'
import { PgBudgetState } from '../../src/main/budgets/state/postgres'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import type { CallRecord } from '../../src/main/ledger/record'
import { openai } from '../../src/main/providers/openai'
import { hashKey } from '../../src/main/proxy/attribution'
import { keyHint } from '../../src/shared/key-hint'
import type { CallContext } from '../../src/main/proxy/gate'
import { PostgresStore } from '../../src/main/storage/postgres'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { PeriodClock } from '../../src/main/time/zone'
import { makeCall } from '../dashboard/seed'
import { usePostgres } from '../support/pg-harness'

/**
 * A session cap counts the whole of a session still in use, however long ago it began: the meters
 * rebuilt at a restart or a rule change, and PostgreSQL's session spend rows, read every call of
 * the sessions with a call in the last 7 days (a session idle for 7 days is forgotten).
 */

const KEY = 'sk-team-aaaaaaaaaaaa-0001'
const DAY = 86_400_000
const at = (s: string) => Date.parse(s)
const NOW = at('2026-03-20T10:00:00Z')

const rule = (p: Partial<Rule> = {}): Rule => ({
  ...DEFAULT_RULE_OPTIONS, api_key_pattern: 'sk-team-*', daily_limit_usd: null, monthly_limit_usd: null, session_limit_usd: 120,
  action: 'block', soft_limit_pct: null, source: 'config', created_at: null, ...p,
})

function ctx(session: string, ts = NOW): CallContext {
  return {
    provider: openai, shape: { endpoint: 'chat.completions', model: 'gpt-4o-mini', stream: false, billable: true },
    apiKey: KEY, apiKeyHash: hashKey(KEY), keyHint: keyHint(KEY), tenant: '', agent: '', session, ts, body: {}, bodyBytes: 10,
  }
}

/** One $5 call a day from `first` to `last` (noon UTC) in `session`. */
function daily(session: string, first: string, last: string): CallRecord[] {
  const out: CallRecord[] = []
  for (let t = at(`${first}T12:00:00Z`); t <= at(`${last}T12:00:00Z`); t += DAY) {
    out.push(makeCall({ ts: t, api_key_hash: hashKey(KEY), key_hint: keyHint(KEY), session, cost_usd: 5 }))
  }
  return out
}

// A session never idle for 7 days, $140 from Feb 20 to Mar 19 against its $120 cap (only $95 since
// March began); another that spent $140 until Mar 5 and has been idle since (forgotten); a third,
// $40 since Mar 12 (under its cap).
const LONG = daily('long-one', '2026-02-20', '2026-03-19')
const IDLE = daily('idle-one', '2026-02-05', '2026-03-05')
const SHORT = daily('short-one', '2026-03-12', '2026-03-19')

describe('a session cap after a restart or a rule change (SQLite)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-session-history-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  const db = openDatabase(join(dir, 'burnrate.db'))
  const ledger = new Ledger(db, { flushIntervalMs: 50, maxPending: 1_000_000, timezone: 'UTC' })
  for (const c of [...LONG, ...IDLE, ...SHORT]) ledger.record(c)
  ledger.flush()
  afterAll(() => {
    ledger.close()
    db.close()
  })

  function restarted(rules: Rule[]): BudgetEngine {
    let engine: BudgetEngine | null = null
    const history = new LocalHistory(db, ledger, () => engine)
    engine = new BudgetEngine('UTC', 1, rules, [], { worstCase: () => 0, expected: () => 0, learn: () => {} }, (since, sessions) => history.load(since, sessions))
    engine.reload(NOW)
    return engine
  }

  it('counts a still-active session whole, forgets one idle for 7 days', () => {
    const e = restarted([rule()])
    expect(e.admit(ctx('long-one'), NOW).refuse?.state).toMatchObject({ period: 'session', spent: 140, limit: 120 })
    expect(e.admit(ctx('idle-one'), NOW).refuse).toBeUndefined()
    expect(e.admit(ctx('short-one'), NOW).refuse).toBeUndefined()
    // A rule change reloads the meters from the ledger: the same.
    e.setRuntimeRules([rule({ session_limit_usd: 150, source: 'runtime' })], NOW)
    expect(e.admit(ctx('long-one'), NOW).refuse).toBeUndefined()
    e.setRuntimeRules([rule({ session_limit_usd: 130, source: 'runtime' })], NOW)
    expect(e.admit(ctx('long-one'), NOW).refuse?.state).toMatchObject({ period: 'session', spent: 140, limit: 130 })
  })

  it('the older spend counts in the session only, not in this month', () => {
    const e = restarted([rule({ monthly_limit_usd: 1000 })])
    const d = e.admit(ctx('long-one'), NOW)
    // Refused by the session cap; this month's spend is what March holds of the three sessions.
    expect(d.refuse?.state).toMatchObject({ period: 'session', spent: 140 })
    const periods = e.status()[0].keys[0].meter.periods(NOW, 'long-one')
    expect(periods.find((p) => p.period === 'monthly')!.spent).toBe(5 * (19 + 5 + 8)) // March: the three sessions' calls since Mar 1
    expect(periods.find((p) => p.period === 'session')!.spent).toBe(140)
  })

  it('reads only the sessions’ calls, by the session index', () => {
    const plan = db.prepare(`EXPLAIN QUERY PLAN ${SESSION_HISTORY_SQL}`).all({ since: NOW - 19 * DAY, active: NOW - 7 * DAY }) as { detail: string }[]
    expect(plan.map((p) => p.detail).join('\n')).toMatch(/calls_session_ts/)
  })
})

describe('a session cap on PostgreSQL: the session spend row is seeded with the whole session', () => {
  const h = usePostgres({ upstream: false })

  it('counts a still-active session whole, forgets one idle for 7 days', async () => {
    const store = new PostgresStore(h.database())
    await migratePostgres(store)
    const state = new PgBudgetState(store)
    h.onTeardown(async () => {
      await state.close()
      await store.close()
    })
    for (const c of [...LONG, ...IDLE, ...SHORT]) {
      await store.run(
        `INSERT INTO calls (ts, provider, model, endpoint, api_key_hash, key_hint, tenant, agent, session, status, streamed,
           input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cache_write_1h_tokens, reasoning_tokens,
           cost_usd, priced, estimated, latency_ms, billing)
         VALUES (@ts, 'openai', 'gpt-4o-mini', 'chat.completions', @k, @hint, '', '', @session, 200, 0, 1, 1, 0, 0, 0, 0, @cost, 1, 0, 5, 'api')`,
        { ts: c.ts, k: c.api_key_hash, hint: c.key_hint, session: c.session, cost: c.cost_usd },
      )
    }
    // The rows the meters load on PostgreSQL (SharedHistory), from the same query: the older spend of the active sessions.
    const older = await store.all<{ session: string; cost: number; t: number }>(SESSION_HISTORY_SQL, { since: at('2026-03-01T00:00:00Z'), active: Date.now() - 7 * DAY })
    expect(older).toEqual([])
    const rows = await store.all<{ session: string; cost: number; t: number }>(SESSION_HISTORY_SQL, { since: at('2026-03-01T00:00:00Z'), active: NOW - 7 * DAY })
    expect(rows.map((r) => [r.session, Number(r.cost), Number(r.t)])).toEqual([['long-one', 45, at('2026-02-28T12:00:00Z')]])

    // The spend row's seed (the clock of this test is the real one: the calls are within 7 days of it).
    const shift = Date.now() - NOW
    await store.run('UPDATE calls SET ts = ts + @shift', { shift })
    const r = rule()
    const meter = new Meter(r, new PeriodClock('UTC', 1))
    const reserve = (session: string) =>
      Promise.resolve(state.reserve({ rule: r, meter, keyHash: hashKey(KEY), session, ts: Date.now(), periods: meter.periods(Date.now(), session), amount: 0 }))
    const long = await reserve('long-one')
    expect(long.ok ? null : { kind: long.kind, period: long.state.period, spent: long.state.spent }).toEqual({ kind: 'reached', period: 'session', spent: 140 })
    for (const s of ['idle-one', 'short-one']) {
      const o = await reserve(s)
      expect(o.ok, s).toBe(true)
      if (o.ok) o.reservation.release()
    }
    const seeded = await store.all<{ session: string; spent_usd: number }>("SELECT session, spent_usd FROM budget_spend WHERE period = 'session' ORDER BY session")
    expect(seeded).toEqual([{ session: 'idle-one', spent_usd: 0 }, { session: 'long-one', spent_usd: 140 }, { session: 'short-one', spent_usd: 40 }])
    expect(await state.settled()).toBe(true)
  }, 60_000)
})
