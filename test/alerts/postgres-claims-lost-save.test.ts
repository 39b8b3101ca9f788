import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { claimCall, claimReady } from './pg-claims'
import { receiver } from './support'

/**
 * On one PostgreSQL, the instance that crosses a threshold keeps it as announced (budget_announced)
 * with a write of its own, apart from the call's. When that write failed (a connection cut, the
 * database away for it) the announcement was dropped: the call was stored all the same, and the
 * instance with the team's webhook, started again after the crossing, read the spend over the
 * threshold with no announcement of it, took it as announced long ago, and never sent it.
 */

const h = usePostgres()
describe('alert claims when an announcement could not be written (PostgreSQL)', () => {
  it('the announcement is written once it can be, and the instance with the webhook sends it when it is up again', async () => {
    const hook = await receiver()
    h.onTeardown(() => hook.close())
    const budgets = { rules: [{ api_key_pattern: 'sk-claim-*', daily_limit_usd: NANO_COST * 2, action: 'warn', alert_at_pct: [1] }] }
    const withHook = { budgets, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 20 } }
    const url = h.database()
    const a = await pgBudgetServer(h, url, { budgets })
    const b = await pgBudgetServer(h, url, withHook)
    replayJson(h.upstream, NANO_FIXTURE)
    await claimReady(a, 'sk-claim-warm-0000')
    await claimReady(b, 'sk-claim-warm-0001')
    await b.stop()
    // A's write of the announcement waits behind a lock, and its connection is cut there.
    const lock = await a.store.pool.connect()
    h.onTeardown(() => lock.release())
    await lock.query('BEGIN')
    await lock.query('LOCK TABLE budget_announced IN SHARE MODE')
    const key = 'sk-claim-ffffffff-0006'
    for (let i = 0; i < 2; i++) expect((await claimCall(a, key)).status).toBe(200)
    await a.server.ledger.flushed()
    const cut = async () =>
      (await a.store.all<{ ok: boolean }>(
        "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE query LIKE 'INSERT INTO budget_announced%' AND wait_event_type = 'Lock'",
      )).length
    await eventually(async () => (await cut()) > 0, 20_000)
    await lock.query('COMMIT')
    // The call that crossed it is stored; the announcement is written too, once it can be.
    expect(await a.store.all('SELECT id FROM calls WHERE api_key_hash = @k', { k: hashKey(key) })).toHaveLength(2)
    await eventually(async () => (await a.store.all('SELECT id FROM budget_announced')).length === 1, 20_000)
    // B again: it reads the spend over 100%, announced, and sends it, once.
    const b2 = await pgBudgetServer(h, url, withHook, b.dir)
    await eventually(() => (budgetsOf(b2.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
    const sent = () => hook.got.filter((g) => g.body.api_key_hash === hashKey(key)).map((g) => g.body.threshold_pct)
    await eventually(() => sent().includes(1), 20_000)
    expect(sent()).toEqual([1])
  }, 120_000)
})
