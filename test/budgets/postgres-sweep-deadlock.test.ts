import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../src/shared/api'
import { Meter } from '../../src/main/budgets/meter'
import type { Rule } from '../../src/main/budgets/rules'
import { PgBudgetState } from '../../src/main/budgets/state/postgres'
import type { ReserveRequest } from '../../src/main/budgets/state/types'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { PeriodClock } from '../../src/main/time/zone'
import { holdRows, lockWaiter, lockWaiters, until, usePostgres } from '../support/pg-harness'

/**
 * The lease sweep (state/pg/leases.ts) frees a killed instance's reservations on their spend rows
 * while other instances admit on those rows. An admission locks the rows in id order; the sweep
 * must too, or the two can each hold a row the other waits for: PostgreSQL then aborts one
 * (40P01, "deadlock detected") after its deadlock_timeout, and the agent's call waits for it.
 */
const h = usePostgres({ upstream: false })
const clock = new PeriodClock('UTC')

const RULE: Rule = {
  ...DEFAULT_RULE_OPTIONS, api_key_pattern: 'sk-*', daily_limit_usd: 1, monthly_limit_usd: null, session_limit_usd: 1, action: 'block',
  soft_limit_pct: null, source: 'config', created_at: null,
} as Rule
const KEY = 'key-sweep-order'

function request(session: string, amount: number): ReserveRequest {
  const meter = new Meter(RULE, clock)
  const ts = Date.now()
  return { rule: RULE, meter, keyHash: KEY, session, ts, periods: meter.periods(ts, session), amount }
}

describe('the lease sweep beside an admission on the same spend rows', () => {
  it('frees an expired reservation without a deadlock, its rows locked in the order an admission locks them', async () => {
    const url = h.database()
    const store = h.store(url)
    await migratePostgres(store)
    // K: an instance killed with a call of session s1 in flight (its lease no longer renewed).
    const killed = new PgBudgetState(h.store(url), { leaseMs: 200 })
    const lost = await killed.reserve(request('s1', 0.05))
    expect(lost.ok).toBe(true)
    await killed.close()
    // A living instance (its own sweeps far off: the test runs the one it looks at), whose call
    // of session s2 settles on the key's daily row and s2's row.
    const live = new PgBudgetState(h.store(url), { leaseMs: 3_600_000, admissionWaitMs: 120_000 })
    h.onTeardown(() => live.close())
    const other = await live.reserve(request('s2', 0.02))
    expect(other.ok).toBe(true)
    if (other.ok) other.reservation.settle(0.02)
    expect(await live.settled()).toBe(true)
    const rows = await store.all<{ id: number; period: string; session: string }>(
      "SELECT id, period, session FROM budget_spend WHERE api_key_hash = @k AND session <> 's2' ORDER BY id", { k: KEY },
    )
    expect(rows.map((r) => `${r.period}:${r.session}`)).toEqual(['daily:', 'session:s1'])
    const [daily, s1] = rows.map((r) => r.id)
    // The daily row, written last, now lies after s1's in the table: a plain UPDATE … FROM reaches s1's first.
    const physical = await store.all<{ id: number }>('SELECT id FROM budget_spend WHERE id IN (@a, @b) ORDER BY ctid', { a: daily, b: s1 })
    expect(physical.map((r) => r.id)).toEqual([s1, daily])
    await until('the killed instance\'s lease ran out', async () =>
      (await store.get<{ n: number }>('SELECT COUNT(*)::int AS n FROM budget_reservations WHERE expires_at < (extract(epoch from clock_timestamp()) * 1000)'))!.n === 2)

    // Another statement holds the daily row a moment (a settlement, another instance's admission):
    // the next call of s1 waits for it, then the sweep comes.
    const hold = await holdRows(store, 'SELECT id FROM budget_spend WHERE id = @id', { id: daily })
    const next = live.reserve(request('s1', 0.03))
    await lockWaiter(store)
    const swept = live.sweep().then((n) => n, (err: unknown) => err)
    await lockWaiters(store, 2)
    await hold.release()

    const admitted = await next
    expect(admitted.ok).toBe(true)
    expect(await swept).toBe(2)
    // The killed call's $0.05 freed, the new call's $0.03 held, s2's $0.02 spent.
    const after = await store.all<{ id: number; spent_usd: number; reserved_usd: number }>(
      'SELECT id, spent_usd, reserved_usd FROM budget_spend WHERE id IN (@a, @b) ORDER BY id', { a: daily, b: s1 },
    )
    expect(after[0].spent_usd).toBeCloseTo(0.02, 9)
    expect(after[0].reserved_usd).toBeCloseTo(0.03, 9)
    expect(after[1].spent_usd).toBeCloseTo(0, 9)
    expect(after[1].reserved_usd).toBeCloseTo(0.03, 9)
    // Written by the server as the statement it aborts fails, before its client hears of it.
    expect(readFileSync(h.pg.log, 'utf8').split('\n').filter((l) => l.includes('deadlock detected'))).toEqual([])
    if (admitted.ok) admitted.reservation.release()
    expect(await live.settled()).toBe(true)
  }, 120_000)
})
