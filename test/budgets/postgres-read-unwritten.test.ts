import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { eventually } from '../support/http'
import { fixture } from '../support/fixtures'
import { holdLock, holdRows, lockWaiter, usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, chat, pgBudgetServer } from './support'

/**
 * On PostgreSQL a read of the meters waits for this instance's calls recorded before it to be
 * stored, then rebuilds the meters from its snapshot, counting again only the calls recorded while
 * it ran. When that wait ended without them stored (the ledger's write failed: its connection
 * lost, PostgreSQL briefly away for it), the rebuilt meters dropped them: the key's spend fell back
 * under its block limit and today's spend with it, until a later read found them stored, and a call
 * decided in process (PostgreSQL not answering its admission) went through the limit.
 */
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture(NANO_FIXTURE) }) })

const KEY = 'sk-unwritten-aaaaaaaaaaaa-0001'

describe('a read of the meters while this instance has calls not yet stored (PostgreSQL)', () => {
  it("keeps the instance's own calls the read's snapshot misses: the spend never drops under the limit", async () => {
    const url = h.database()
    const t = await pgBudgetServer(h, url, { ...ADMIN_CONFIG, timezone: 'UTC', storage: { budget_wait_ms: 1000 }, budgets: { rules: [{ api_key_pattern: 'sk-unwritten-*', daily_limit_usd: NANO_COST * 1.5, action: 'block' }] } })
    const engine = budgetsOf(t.server.context).engine
    const spend = t.server.context.ledger.spend
    const hash = hashKey(KEY)
    const meterSpent = () => {
      const m = engine.status().flatMap((r) => r.keys).find((k) => k.key.hash === hash)?.meter
      return m ? m.periods(Date.now()).find((p) => p.period === 'daily')!.spent : 0
    }
    // The first call is stored and read.
    expect((await chat(t, KEY)).status).toBe(200)
    await eventually(async () => Number((await t.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM calls'))!.n) === 1, 20_000)
    // The second is recorded, but its write waits (the calls table held by another session).
    const lock = await holdLock(t.store, 'LOCK TABLE calls IN SHARE MODE')
    expect((await chat(t, KEY)).status).toBe(200)
    await lockWaiter(t.store, 20_000)
    await eventually(() => meterSpent() === NANO_COST * 2)
    expect(spend.key(hash).day).toBe(NANO_COST * 2)
    // A rule change reads the meters again; the read waits for the write, which then fails.
    let replaced = 0
    const replace = spend.replace.bind(spend)
    spend.replace = (rows, now) => {
      replace(rows, now)
      replaced++
    }
    const ledger = t.server.context.ledger
    const flushed = ledger.flushed.bind(ledger)
    let waiting = 0
    ledger.flushed = () => {
      waiting++
      return flushed()
    }
    expect((await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-other-*', daily_limit_usd: 5, action: 'warn' } })).status).toBe(201)
    await eventually(() => waiting > 0, 20_000)
    ledger.flushed = flushed
    await t.store.run("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO calls%' AND datname = current_database()")
    await eventually(() => replaced > 0, 20_000)
    // The read's snapshot holds the first call only: the meter still counts both, at the limit.
    expect(Number((await t.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM calls'))!.n)).toBe(1)
    expect(meterSpent()).toBe(NANO_COST * 2)
    expect(spend.key(hash).day).toBe(NANO_COST * 2)
    // A call while PostgreSQL does not answer its admission (the key's spend rows held past
    // storage.budget_wait_ms) is decided on this instance's meter: refused, the limit reached (it
    // went through before, the meter at the first call's spend).
    const held = await holdRows(t.store, 'SELECT id FROM budget_spend WHERE api_key_hash = @k', { k: hash })
    const third = await chat(t, KEY)
    await held.release()
    expect(third.status).toBe(429)
    expect(third.json().error.type).toBe('budget_exceeded')
    await lock.release()
    // Once stored, a later read counts it once.
    await eventually(async () => Number((await t.store.get<{ n: number }>("SELECT COUNT(*) AS n FROM calls WHERE status = 200"))!.n) === 2, 30_000)
    const before = replaced
    expect((await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-other2-*', daily_limit_usd: 5, action: 'warn' } })).status).toBe(201)
    await eventually(() => replaced > before, 20_000)
    expect(meterSpent()).toBe(NANO_COST * 2)
    expect(spend.key(hash).day).toBe(NANO_COST * 2)
  }, 90_000)
})
