import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { alertsOf } from '../../src/main/alerts'
import { AlertClaims } from '../../src/main/alerts/claims'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually } from '../support/http'
import { until, usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { claimCall, claimReady } from './pg-claims'
import { receiver } from './support'

/**
 * A rolling upgrade: builds before 41d35390 settle and let go the claims they win (a `settling:`
 * token) but never say they are alive on them, and a rolling window's claim they win again (its
 * spend fell under the threshold and rose over it, 10 minutes or more after the last claim) keeps
 * the `alive_at` the last holder of this build left there, long past. An instance of this build
 * took that row for a dead holder's: it took the claim over while the old build's delivery was
 * under way (standing by, or reading the crossing back at its start) and the webhook got the
 * alert twice. Only a claim said alive since it was won (`alive_at` not before `claimed_at`: every
 * claim of this build's) is taken over when its holder goes silent.
 */

const h = usePostgres()
const budgets = { rules: [{ api_key_pattern: 'sk-claim-*', window_hours: 5, window_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] }
/** How builds before 41d35390 claimed a crossing (alerts/claims.ts CLAIM_SQL at 41d35390^): no `alive_at`. */
const OLD_CLAIM = `INSERT INTO alert_claims (id, owner) VALUES (@id, @owner)
  ON CONFLICT (id) DO UPDATE SET claimed_at = now(), owner = EXCLUDED.owner
    WHERE @rearm_s::float8 IS NOT NULL AND alert_claims.claimed_at < now() - @rearm_s::float8 * interval '1 second'
  RETURNING id`

describe("a rolling window's claim an earlier build won again (PostgreSQL)", () => {
  it('is not taken over as a dead holder\'s by an instance of this build: the alert is sent once', async () => {
    const hook = await receiver()
    h.onTeardown(() => hook.close())
    const url = h.database()
    const config = { budgets, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }] } }
    const a = await pgBudgetServer(h, url, config)
    replayJson(h.upstream, NANO_FIXTURE)
    await claimReady(a, 'sk-claim-warm-0001')
    const key = 'sk-claim-rearmed-0001'
    const sent = () => hook.got.filter((g) => g.body.api_key_hash === hashKey(key))
    // Two calls through A (this build): the window's 50%, claimed, delivered and settled.
    for (let i = 0; i < 2; i++) expect((await claimCall(a, key)).status).toBe(200)
    await eventually(() => sent().length === 1, 20_000)
    await until('A settles its claim', async () => (await a.store.all('SELECT 1 FROM alert_claims WHERE owner IS NULL')).length === 1, 20_000)
    const [{ id }] = await a.store.all<{ id: string }>('SELECT id FROM alert_claims')
    // Eleven minutes on (the window fell under 50% and rose over it again), an instance of the
    // earlier build wins the claim again, and its delivery is under way.
    await a.store.run("UPDATE alert_claims SET claimed_at = claimed_at - interval '11 minutes', alive_at = alive_at - interval '11 minutes'")
    expect(await a.store.all(OLD_CLAIM, { id, owner: `settling:${randomUUID()}`, rearm_s: 600 })).toHaveLength(1)
    // B (this build) starts, reads the window's crossing back and finds it claimed: it stands by, and sends nothing.
    const b = await pgBudgetServer(h, url, config)
    await until('B stands by for the claim (or sends the alert again)', () => alertsOf(b.server.context).standingBy() === 1 || sent().length > 1, 30_000)
    expect(sent()).toHaveLength(1)
    // And standing by, it finds the claim held, not free to take over.
    expect((await new AlertClaims(b.store).standing([id], 60_000)).get(id)).toBe('held')
  }, 120_000)
})
