import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { ensurePostgresSchema } from '../../src/main/storage/postgres-migrations'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { claimCall, claimHook } from './pg-claims'

/**
 * On PostgreSQL an instance that sent an alert without its claim answered asks for that claim
 * again every 5 s. One such ask under way as the instance stopped (a deploy), won after the stop
 * had let go the claims of the alerts it dropped, was let go too late (the database closed) and
 * stood, held by no running instance: the alert, its retry dropped at the stop, was sent by no
 * instance, the next start to read the crossing back standing by for that claim until it aged out.
 * A claim won so is let go by the stop as any.
 */

const h = usePostgres()
const budgets = { rules: [{ api_key_pattern: 'sk-claim-*', daily_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] }

describe('a claim asked again late, won as its instance stops (PostgreSQL)', () => {
  it('is let go by that stop, and the next start sends the alert its retry dropped, once', async () => {
    const wh = await claimHook(false)
    h.onTeardown(() => wh.close())
    const config = { budgets, alerts: { webhooks: [{ url: wh.url, format: 'json' }], backoff_ms: 60_000, retries: 3 } }
    const url = h.database()
    replayJson(h.upstream, NANO_FIXTURE)
    const key = 'sk-claim-late-stop-0001'
    const a = await pgBudgetServer(h, url, config)
    // Claims cannot be made (the query fails): A sends the alert unasked; the webhook refuses it and its retry waits.
    await ensurePostgresSchema(a.store)
    await a.store.run(`CREATE FUNCTION hold_claims() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'claims refused'; END $$`)
    await a.store.run('CREATE TRIGGER hold_claims BEFORE INSERT ON alert_claims FOR EACH ROW EXECUTE FUNCTION hold_claims()')
    for (let i = 0; i < 2; i++) expect((await claimCall(a, key)).status).toBe(200)
    await eventually(() => wh.state.posts === 1, 20_000)
    // Now a claim answers, slowly: A stops while its next ask is under way.
    await a.store.run(`CREATE OR REPLACE FUNCTION hold_claims() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(1); RETURN NEW; END $$`)
    await eventually(async () => (await a.store.all("SELECT 1 FROM pg_stat_activity WHERE query LIKE 'INSERT INTO alert_claims%' AND state = 'active'")).length > 0, 20_000)
    await a.stop()
    await a.store.run('DROP TRIGGER hold_claims ON alert_claims')
    // B starts with the webhook up, reads the crossing back, and sends it.
    wh.state.up = true
    const b = await pgBudgetServer(h, url, config)
    await eventually(() => wh.got.length === 1, 30_000)
    expect(wh.got[0]).toMatchObject({ type: 'budget.threshold', threshold_pct: 0.5, api_key_hash: hashKey(key) })
    await b.stop()
  }, 120_000)
})
