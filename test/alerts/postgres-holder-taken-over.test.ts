import { describe, expect, it } from 'vitest'
import { alertsOf } from '../../src/main/alerts'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually } from '../support/http'
import { until, usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { type ClaimServer, claimCall, claimReady } from './pg-claims'
import { receiver } from './support'

/**
 * On PostgreSQL an instance that holds a claim says so every 5 s; one silent for 30 s is taken for
 * killed, and an instance standing by takes its claim over and sends the alert. When the holder
 * was alive but its says were not written (the database not answering it, its pool too busy), its
 * retry still waiting went to the webhook after the other instance had sent it: twice. A holder
 * that finds its claim taken over drops its retry.
 */

const h = usePostgres()
const budgets = { rules: [{ api_key_pattern: 'sk-claim-*', daily_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] }

const thresholds = (s: ClaimServer) => alertsOf(s.server.context).webhooks.deliveries().filter((d) => d.type === 'budget.threshold')

describe('a claim taken over while its holder is alive (PostgreSQL)', () => {
  it("is sent by the instance that took it over, and the holder's retry is dropped: once", async () => {
    // The first POST is refused (A's first attempt): its retry waits 90 s.
    const hook = await receiver(1)
    h.onTeardown(() => hook.close())
    const url = h.database()
    const config = { budgets, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 90_000, retries: 3 } }
    const a = await pgBudgetServer(h, url, config)
    const b = await pgBudgetServer(h, url, config)
    replayJson(h.upstream, NANO_FIXTURE)
    await claimReady(a, 'sk-claim-warm-0001')
    await claimReady(b, 'sk-claim-warm-0002')
    // A holder's says (an UPDATE of alive_at alone) fail while `cut` holds a row.
    await a.store.run('CREATE TABLE cut (x int)')
    await a.store.run('INSERT INTO cut VALUES (1)')
    await a.store.run(`CREATE FUNCTION cut_says() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF EXISTS (SELECT 1 FROM cut) THEN RAISE EXCEPTION 'connection cut'; END IF; RETURN NEW; END $$`)
    await a.store.run(`CREATE TRIGGER cut_says BEFORE UPDATE ON alert_claims FOR EACH ROW
      WHEN (OLD.owner IS NOT DISTINCT FROM NEW.owner) EXECUTE FUNCTION cut_says()`)
    const key = 'sk-claim-takenover-0001'
    const sent = () => hook.got.filter((g) => g.body.api_key_hash === hashKey(key))
    // Two calls through A: 50%. A claims it and is refused; B loses and stands by.
    for (let i = 0; i < 2; i++) expect((await claimCall(a, key)).status).toBe(200)
    await until("A's first attempt is refused", () => thresholds(a).some((d) => d.last_status === 500), 20_000)
    await until('B stands by', () => alertsOf(b.server.context).standingBy() === 1, 20_000)
    // A silent for 30 s: B takes the claim over and sends it.
    await eventually(() => sent().length === 1, 90_000)
    await until('B delivers it', () => thresholds(b).some((d) => d.status === 'delivered'), 20_000)
    // A's says are written again: it finds the claim another's, and its retry goes.
    await a.store.run('DELETE FROM cut')
    await until("A's delivery ends", () => thresholds(a).every((d) => d.status !== 'pending'), 150_000)
    expect(thresholds(a).map((d) => d.status)).toEqual(['failed'])
    expect(sent()).toHaveLength(1)
  }, 240_000)
})
