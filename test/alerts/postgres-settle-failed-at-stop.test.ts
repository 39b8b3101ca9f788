import { describe, expect, it } from 'vitest'
import { alertsOf } from '../../src/main/alerts'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually } from '../support/http'
import { until, usePostgres } from '../support/pg-harness'
import { type ClaimServer, claimCall, twoClaimServers } from './pg-claims'

/**
 * On PostgreSQL a delivered alert's claim whose settle the database did not take is settled again,
 * and said alive meanwhile, every 5 s (./postgres-settle-failed.test.ts). An instance shut down
 * before that settle was written stopped saying it was alive on the claim and never tried it
 * again, though the database answered its shutdown: 30 s later the instance standing by took the
 * claim over as a dead instance's and the webhook got the alert twice. Shutdown settles it once more.
 */

const h = usePostgres()
const thresholds = (s: ClaimServer) => alertsOf(s.server.context).webhooks.deliveries().filter((d) => d.type === 'budget.threshold')

describe('a delivered alert whose claim was not settled yet at shutdown (PostgreSQL)', () => {
  it('is settled by the shutdown, not taken over and sent again', async () => {
    const { hook, a, b } = await twoClaimServers(h)
    // Every settle fails while `settle_blocked` holds a row; each try counted (a sequence: not rolled back).
    await a.store.run('CREATE TABLE settle_blocked (x int)')
    await a.store.run('INSERT INTO settle_blocked VALUES (1)')
    await a.store.run('CREATE SEQUENCE settle_tries')
    await a.store.run(`CREATE FUNCTION settle_blocked() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM nextval('settle_tries'); IF EXISTS (SELECT 1 FROM settle_blocked) THEN RAISE EXCEPTION 'connection cut'; END IF; RETURN NEW; END $$`)
    await a.store.run(`CREATE TRIGGER settle_blocked BEFORE UPDATE ON alert_claims FOR EACH ROW
      WHEN (OLD.owner IS NOT NULL AND NEW.owner IS NULL) EXECUTE FUNCTION settle_blocked()`)
    const key = 'sk-claim-settle-0002'
    const sent = () => hook.got.filter((g) => g.body.api_key_hash === hashKey(key))
    // Two calls through A: 50%. A claims and delivers it, and its settle fails; B loses and stands by.
    for (let i = 0; i < 2; i++) expect((await claimCall(a, key)).status).toBe(200)
    await eventually(() => sent().length === 1, 20_000)
    await until('A tried to settle the claim', async () => (await a.store.all<{ is_called: boolean }>('SELECT is_called FROM settle_tries'))[0].is_called, 20_000)
    await until('B stands by for the claim A holds', () => alertsOf(b.server.context).standingBy() === 1, 20_000)
    // The database takes settles again as A shuts down (its sender's close is the shutdown's first step for alerts).
    const sender = alertsOf(a.server.context).webhooks
    const close = sender.close.bind(sender)
    sender.close = async () => {
      await a.store.run('DELETE FROM settle_blocked')
      return close()
    }
    await a.stop()
    expect(await a.store.all('SELECT owner FROM alert_claims')).toEqual([{ owner: null }])
    await until('B no longer stands by', () => alertsOf(b.server.context).standingBy() === 0, 20_000)
    expect(sent()).toHaveLength(1)
    expect(thresholds(b)).toHaveLength(0)
  }, 120_000)
})
