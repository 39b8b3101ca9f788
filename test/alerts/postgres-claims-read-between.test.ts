import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { claimCall, claimReady, claimSpent } from './pg-claims'
import { receiver } from './support'

/**
 * On one PostgreSQL, an instance crossing a threshold keeps it as announced (budget_announced) at
 * once, and stores the call that crossed it with its ledger's next write. An instance with the
 * team's webhook that read the meters in between (a reload: a rule or clock change, a reconnect)
 * took the threshold as announced with the spend still under it; when the call then reached it,
 * its meters crossed a threshold "already announced" and told nobody: the webhook never got it,
 * though no instance ever sent it there. (CI: postgres-claims-restart.test.ts, under load.)
 */

const h = usePostgres()
describe('alert claims when a read falls between an announcement and its call (PostgreSQL)', () => {
  it('the instance with the webhook sends a threshold whose announcement it read before the call that crossed it', async () => {
    const hook = await receiver()
    h.onTeardown(() => hook.close())
    const budgets = { rules: [{ api_key_pattern: 'sk-claim-*', daily_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [1] }] }
    const url = h.database()
    const a = await pgBudgetServer(h, url, { budgets })
    const b = await pgBudgetServer(h, url, { budgets, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 20 } })
    replayJson(h.upstream, NANO_FIXTURE)
    await claimReady(a, 'sk-claim-warm-0000')
    await claimReady(b, 'sk-claim-warm-0001')
    const key = 'sk-claim-eeeeeeee-0005'
    // Three calls through A: 75%, which B counts too.
    for (let i = 0; i < 3; i++) expect((await claimCall(a, key)).status).toBe(200)
    await a.server.ledger.flushed()
    await eventually(async () => (await claimSpent(b, key)) >= NANO_COST * 3 * (1 - 1e-9), 20_000)
    // A's ledger cannot store calls for now (reads go on): the fourth call crosses 100% on A,
    // which keeps it as announced, while the call itself waits to be stored.
    const lock = await a.store.pool.connect()
    h.onTeardown(() => lock.release())
    await lock.query('BEGIN')
    await lock.query('LOCK TABLE calls IN EXCLUSIVE MODE')
    expect((await claimCall(a, key)).status).toBe(200)
    await eventually(async () => (await a.store.all('SELECT id FROM budget_announced')).length === 1, 20_000)
    // B reads the meters now: the threshold announced, the spend still at 75%.
    await budgetsOf(b.server.context).feed!.reload()
    expect(await claimSpent(b, key)).toBeCloseTo(NANO_COST * 3, 12)
    // The call is stored; B hears it and reaches 100%, which the webhook gets, once.
    await lock.query('COMMIT')
    await eventually(async () => (await claimSpent(b, key)) >= NANO_COST * 4 * (1 - 1e-9), 20_000)
    const sent = () => hook.got.filter((g) => g.body.api_key_hash === hashKey(key)).map((g) => g.body.threshold_pct)
    await eventually(() => sent().includes(1), 20_000)
    await eventually(async () => (await a.store.all('SELECT id FROM alert_claims')).length === 1, 20_000)
    expect(sent()).toEqual([1])
  }, 120_000)
})
