import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually } from '../support/http'
import { until, usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { claimCall } from './pg-claims'
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
})
