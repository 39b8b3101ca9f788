import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { getJson } from '../dashboard/seed'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { claimCall, claimHook } from './pg-claims'

/**
 * On PostgreSQL an instance whose claim of a crossing could not be asked (the query failed) sends
 * the alert anyway (twice rather than never). Shut down with that alert's retry waiting, it "let
 * its claim go": it deleted the claim row by its id, though that row was the one another
 * instance had won and sent it by, so the next instance to read the crossing back claimed it anew
 * and the webhook got it again. An instance lets go only the claims it won.
 */

const h = usePostgres()
const budgets = { rules: [{ api_key_pattern: 'sk-claim-*', daily_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] }

const deliveries = async (url: string) => (await getJson(`${url}/api/dashboard/alerts`)).body.deliveries as any[]

describe('a claim that could not be asked (PostgreSQL)', () => {
  it("is not let go at shutdown: the claim another instance won stands, and no later start sends the alert again", async () => {
    const wh = await claimHook()
    h.onTeardown(() => wh.close())
    const config = { budgets, alerts: { webhooks: [{ url: wh.url, format: 'json' }], backoff_ms: 60_000, retries: 3 } }
    const url = h.database()
    replayJson(h.upstream, NANO_FIXTURE)
    const key = 'sk-claim-unasked-0001'
    const sent = () => wh.got.filter((g) => g.api_key_hash === hashKey(key))
    // A crosses 50%, claims it and delivers it.
    const a = await pgBudgetServer(h, url, config)
    for (let i = 0; i < 2; i++) expect((await claimCall(a, key)).status).toBe(200)
    await eventually(() => sent().length === 1, 20_000)
    await a.server.ledger.flushed()
    expect(await a.store.all('SELECT id FROM alert_claims')).toHaveLength(1)
    await a.stop()
    // Claims cannot be made for a while (the query fails), and the webhook is down.
    await a.store.run(`CREATE FUNCTION refuse_claims() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'claims refused'; END $$`)
    await a.store.run('CREATE TRIGGER refuse_claims BEFORE INSERT ON alert_claims FOR EACH ROW EXECUTE FUNCTION refuse_claims()')
    wh.state.up = false
    // B starts, reads the crossing back, cannot ask for its claim and sends it anyway: refused, its retry waits.
    const b = await pgBudgetServer(h, url, config)
    await eventually(async () => (await deliveries(b.url)).some((d) => d.type === 'budget.threshold' && d.last_status === 500), 20_000)
    await b.stop()
    await a.store.run('DROP TRIGGER refuse_claims ON alert_claims')
    wh.state.up = true
    // A's claim stands: C, started later with the same webhook, reads the crossing back as sent.
    expect(await a.store.all('SELECT id FROM alert_claims')).toHaveLength(1)
    const c = await pgBudgetServer(h, url, config)
    await eventually(() => (budgetsOf(c.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
    expect((await claimCall(c, 'sk-claim-warm-0003')).status).toBe(200)
    await eventually(async () => (await getJson(`${c.url}/api/dashboard/budgets`)).body.rules.some((r: any) => r.api_key_hash === hashKey('sk-claim-warm-0003')), 20_000)
    // Its second call crosses 50% after those reads: claimed after any crossing they found, and
    // its alert goes to the webhook in turn, received after any such one; the first was not sent again.
    expect((await claimCall(c, 'sk-claim-warm-0003')).status).toBe(200)
    await eventually(() => wh.got.some((g) => g.api_key_hash === hashKey('sk-claim-warm-0003')), 20_000)
    expect(sent()).toHaveLength(1)
  }, 120_000)
})
