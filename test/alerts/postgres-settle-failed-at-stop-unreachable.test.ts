import { describe, expect, it } from 'vitest'
import { alertsOf } from '../../src/main/alerts'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually } from '../support/http'
import { until, usePostgres } from '../support/pg-harness'
import { type ClaimServer, claimCall, twoClaimServers } from './pg-claims'

/**
 * On PostgreSQL a claim whose settle the database does not take even at shutdown (it cannot be
 * reached as the instance stops) is held by no running instance: 30 s on it is taken over as a
 * killed instance's and its alert sent again (README: Alerts, twice rather than never, as whenever
 * the database cannot be asked: an attempt cut there may not have reached the webhook).
 */

const h = usePostgres()
const thresholds = (s: ClaimServer) => alertsOf(s.server.context).webhooks.deliveries().filter((d) => d.type === 'budget.threshold')

describe('an alert whose claim the database does not settle at shutdown (PostgreSQL)', () => {
  it('is taken over by the instance standing by, and sent again', async () => {
    const { hook, a, b } = await twoClaimServers(h)
    // No settle is taken (a sequence counts the tries: not rolled back); A's is the only one until it stops.
    await a.store.run('CREATE SEQUENCE settle_tries')
    await a.store.run(`CREATE FUNCTION settle_refused() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM nextval('settle_tries'); RAISE EXCEPTION 'connection cut'; END $$`)
    await a.store.run(`CREATE TRIGGER settle_refused BEFORE UPDATE ON alert_claims FOR EACH ROW
      WHEN (OLD.owner IS NOT NULL AND NEW.owner IS NULL) EXECUTE FUNCTION settle_refused()`)
    const key = 'sk-claim-settle-0003'
    const sent = () => hook.got.filter((g) => g.body.api_key_hash === hashKey(key))
    for (let i = 0; i < 2; i++) expect((await claimCall(a, key)).status).toBe(200)
    await eventually(() => sent().length === 1, 20_000)
    await until('A tried to settle the claim', async () => (await a.store.all<{ is_called: boolean }>('SELECT is_called FROM settle_tries'))[0].is_called, 20_000)
    await until('B stands by for the claim A holds', () => alertsOf(b.server.context).standingBy() === 1, 20_000)
    await a.stop()
    // Held by no running instance, under A's token: B takes it over once A has been silent 30 s, and sends it.
    expect((await a.store.all<{ owner: string | null }>('SELECT owner FROM alert_claims'))[0].owner).toMatch(/^settling:/)
    await until('B sent the alert again', () => sent().length === 2, 90_000)
    expect(thresholds(b)).toHaveLength(1)
    expect(sent()[1].body.id).toBe(sent()[0].body.id)
  }, 150_000)
})
