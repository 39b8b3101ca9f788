import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually } from '../support/http'
import { until, usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { cutProxy } from '../support/cut-proxy'
import { claimCall, claimReady } from './pg-claims'
import { receiver } from './support'

/**
 * On PostgreSQL an instance whose claim of a crossing the database did not answer sends the alert
 * anyway (twice rather than never), holding no claim. Builds before this one never wrote that claim:
 * another instance that read the crossing back once the database answered again (a start, a read
 * of the meters) found no claim, won it and sent the alert a second time. The instance that sent it
 * writes its claim once the database answers, and the other finds it sent.
 */

const h = usePostgres()
const budgets = { rules: [{ api_key_pattern: 'sk-claim-*', daily_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5, 1] }] }

describe('an alert sent without its claim answered (PostgreSQL)', () => {
  it('has its claim written once the database answers, and an instance reading the crossing back does not send it again', async () => {
    const hook = await receiver()
    h.onTeardown(() => hook.close())
    const config = { budgets, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 20 } }
    const url = h.database()
    replayJson(h.upstream, NANO_FIXTURE)
    const key = 'sk-claim-late-0001'
    const sent = () => hook.got.filter((g) => g.body.api_key_hash === hashKey(key)).map((g) => g.body.threshold_pct)
    const a = await pgBudgetServer(h, url, config)
    await eventually(() => (budgetsOf(a.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
    // The database does not answer A's claims (the query fails, as with a connection cut) while A crosses 50%.
    await a.store.run(`CREATE FUNCTION refuse_claims() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'claims refused'; END $$`)
    await a.store.run('CREATE TRIGGER refuse_claims BEFORE INSERT OR UPDATE ON alert_claims FOR EACH ROW EXECUTE FUNCTION refuse_claims()')
    for (let i = 0; i < 2; i++) expect((await claimCall(a, key)).status).toBe(200)
    // A sends it all the same.
    await eventually(() => sent().length === 1, 20_000)
    expect(sent()).toEqual([0.5])
    await a.server.ledger.flushed()
    expect(await a.store.all('SELECT id FROM alert_claims')).toHaveLength(0)
    // The database answers again: A writes the claim of what it sent, done with (delivered).
    await a.store.run('DROP TRIGGER refuse_claims ON alert_claims')
    await until('A writes the claim of the alert it sent unasked', async () => (await a.store.all('SELECT id FROM alert_claims WHERE owner IS NULL')).length === 1, 30_000)
    await until('the crossing is kept as announced', async () => (await a.store.all('SELECT id FROM budget_announced')).length > 0, 30_000)
    await a.stop()
    // B starts, reads the crossing back, finds it sent; then its own calls cross the limit, which
    // it claims and sends after the crossing read back (claims are sent in order).
    const b = await pgBudgetServer(h, url, config)
    await eventually(() => (budgetsOf(b.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
    for (let i = 0; i < 2; i++) expect((await claimCall(b, key)).status).toBe(200)
    await eventually(() => sent().includes(1), 20_000)
    expect(sent()).toEqual([0.5, 1])
  }, 120_000)

  it('so with PostgreSQL gone away for that instance as it crossed, and back', async () => {
    const hook = await receiver()
    h.onTeardown(() => hook.close())
    const url = h.database()
    const proxy = await cutProxy(Number(new URL(url).port))
    h.onTeardown(() => proxy.close())
    const alerts = { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 20 }
    replayJson(h.upstream, NANO_FIXTURE)
    const key = 'sk-claim-late-0002'
    const sent = () => hook.got.filter((g) => g.body.api_key_hash === hashKey(key)).map((g) => g.body.threshold_pct)
    const db = h.store(url)
    // A reaches PostgreSQL through a relay; its calls wait a second for the database, then are decided in process.
    const a = await pgBudgetServer(h, proxy.url(url), { budgets, alerts, storage: { budget_wait_ms: 1000 } })
    await claimReady(a, 'sk-claim-warm-0004')
    proxy.cut()
    for (let i = 0; i < 2; i++) expect((await claimCall(a, key)).status).toBe(200)
    // A sends it with no claim asked.
    await eventually(() => sent().length === 1, 20_000)
    expect(sent()).toEqual([0.5])
    expect(await db.all('SELECT id FROM alert_claims')).toHaveLength(0)
    // PostgreSQL is back for A: its calls, the crossing as announced and the claim of what it sent are written.
    proxy.restore()
    await until("A's calls are stored", async () => (await db.all('SELECT id FROM calls WHERE api_key_hash = @k', { k: hashKey(key) })).length === 2, 60_000)
    await until('the crossing is kept as announced', async () => (await db.all('SELECT id FROM budget_announced')).length > 0, 60_000)
    await until('A writes the claim of the alert it sent unasked', async () => (await db.all('SELECT id FROM alert_claims WHERE owner IS NULL')).length === 1, 60_000)
    await a.stop()
    const b = await pgBudgetServer(h, url, { budgets, alerts })
    await eventually(() => (budgetsOf(b.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
    for (let i = 0; i < 2; i++) expect((await claimCall(b, key)).status).toBe(200)
    await eventually(() => sent().includes(1), 20_000)
    expect(sent()).toEqual([0.5, 1])
  }, 180_000)
})
