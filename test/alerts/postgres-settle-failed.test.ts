import { describe, expect, it } from 'vitest'
import { alertsOf } from '../../src/main/alerts'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually } from '../support/http'
import { until, usePostgres } from '../support/pg-harness'
import { type ClaimServer, claimCall, twoClaimServers } from './pg-claims'

/**
 * On PostgreSQL the instance that sends a crossing settles its claim once the webhook took it, and
 * stops saying it is alive on it. When that settle failed (the database not answering that one
 * query: a restart, a connection cut) the claim stood under its token, no longer said alive, and
 * 30 s later the instance standing by for it took it over as a dead instance's and sent the alert
 * again: the webhook got it twice. A settle that fails is tried again, and the claim said alive,
 * every few seconds until it is written.
 */

const h = usePostgres()
const thresholds = (s: ClaimServer) => alertsOf(s.server.context).webhooks.deliveries().filter((d) => d.type === 'budget.threshold')

describe('a delivered alert whose claim could not be settled at once (PostgreSQL)', () => {
  it('is not taken over and sent again by the instance standing by for it', async () => {
    const { hook, a, b } = await twoClaimServers(h)
    // The first settle of a claim fails (a sequence: not rolled back with the failed UPDATE).
    await a.store.run('CREATE SEQUENCE settle_tries')
    await a.store.run(`CREATE FUNCTION settle_fails_once() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF nextval('settle_tries') = 1 THEN RAISE EXCEPTION 'connection cut'; END IF; RETURN NEW; END $$`)
    await a.store.run(`CREATE TRIGGER settle_fails_once BEFORE UPDATE ON alert_claims FOR EACH ROW
      WHEN (OLD.owner IS NOT NULL AND NEW.owner IS NULL) EXECUTE FUNCTION settle_fails_once()`)
    const key = 'sk-claim-settle-0001'
    const sent = () => hook.got.filter((g) => g.body.api_key_hash === hashKey(key))
    // Two calls through A: 50%. A claims and delivers it; B, which sees the crossing once the calls are stored, loses and stands by.
    for (let i = 0; i < 2; i++) expect((await claimCall(a, key)).status).toBe(200)
    await eventually(() => sent().length === 1, 20_000)
    await until('B stands by for the claim A holds', () => alertsOf(b.server.context).standingBy() === 1, 20_000)
    // A's settle is written at last, and B stops standing by: the claim is done with, not taken over.
    const settled = async () => (await a.store.all('SELECT 1 FROM alert_claims WHERE owner IS NULL')).length === 1
    await until('the claim is settled and B no longer stands by', async () => (await settled()) && alertsOf(b.server.context).standingBy() === 0, 90_000)
    expect(sent()).toHaveLength(1)
    expect(thresholds(a)).toHaveLength(1)
    expect(thresholds(b)).toHaveLength(0)
  }, 150_000)
})
