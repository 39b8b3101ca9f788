import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { eventually } from '../support/http'
import { fixture } from '../support/fixtures'
import { holdLock, lockWaiter, usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, chat, pgBudgetServer } from '../budgets/support'
import { receiver } from './support'

/**
 * An instance announces a rolling window's crossing as the call that crosses it is recorded, and
 * claims it (./claims.ts). A read of the meters whose snapshot misses that call (its write not
 * done yet) counts it again, and finds the crossing again, kept as announced: told as restored, it
 * was claimed a second time. That claim loses to the first one's row, but when the first was sent
 * without the database answering (no row of it) it won, and the webhook got the alert twice.
 */
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture(NANO_FIXTURE) }) })

const KEY = 'sk-own-aaaaaaaaaaaa-0001'

describe("an instance's own crossing found again by a read that missed the call (PostgreSQL)", () => {
  it('is not sent a second time, though its first claim could not be asked', async () => {
    const hook = await receiver()
    h.onTeardown(() => hook.close())
    const url = h.database()
    const budgets = { rules: [{ api_key_pattern: 'sk-own-*', window_hours: 5, window_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] }
    const t = await pgBudgetServer(h, url, { ...ADMIN_CONFIG, budgets, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 20 } })
    const reloads = () => budgetsOf(t.server.context).feed?.stats.reloads ?? 0
    await eventually(() => reloads() > 0, 20_000)
    const sent = () => hook.got.filter((g) => g.body.api_key_hash === hashKey(KEY))
    // Claims cannot be made (the query fails), and the calls' write waits (the table held).
    await t.store.run(`CREATE FUNCTION refuse_claims() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'claims refused'; END $$`)
    await t.store.run('CREATE TRIGGER refuse_claims BEFORE INSERT ON alert_claims FOR EACH ROW EXECUTE FUNCTION refuse_claims()')
    const lock = await holdLock(t.store, 'LOCK TABLE calls IN SHARE MODE')
    h.onTeardown(() => lock.release())
    // Two calls cross 50%: sent unasked.
    for (let i = 0; i < 2; i++) expect((await chat(t, KEY)).status).toBe(200)
    await eventually(() => sent().length === 1, 20_000)
    await lockWaiter(t.store, 20_000)
    await t.store.run('DROP TRIGGER refuse_claims ON alert_claims')
    // A rule change reads the meters; the read waits for the calls' write, which then fails: its
    // snapshot misses them, and it counts them again.
    const ledger = t.server.context.ledger
    const flushed = ledger.flushed.bind(ledger)
    let waiting = 0
    ledger.flushed = () => {
      waiting++
      return flushed()
    }
    const before = reloads()
    expect((await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-other-*', daily_limit_usd: 5, action: 'warn' } })).status).toBe(201)
    await eventually(() => waiting > 0, 20_000)
    ledger.flushed = flushed
    await t.store.run("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO calls%' AND datname = current_database()")
    await eventually(() => reloads() > before, 20_000)
    await lock.release()
    // The calls are stored in the end, and the meters read them again (another rule change).
    await eventually(async () => Number((await t.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM calls WHERE api_key_hash = @k', { k: hashKey(KEY) }))!.n) === 2, 30_000)
    const after = reloads()
    expect((await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-other2-*', daily_limit_usd: 5, action: 'warn' } })).status).toBe(201)
    await eventually(() => reloads() > after, 20_000)
    // A crossing of another key after those reads is claimed after any crossing they found, and its
    // alerts go to the webhook in turn: received after any such one, and the first was not sent again.
    const later = 'sk-own-bbbbbbbbbbbb-0002'
    for (let i = 0; i < 2; i++) expect((await chat(t, later)).status).toBe(200)
    await eventually(() => hook.got.some((g) => g.body.api_key_hash === hashKey(later)), 20_000)
    expect(sent()).toHaveLength(1)
  }, 90_000)
})
