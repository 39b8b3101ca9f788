import { describe, expect, it } from 'vitest'
import { alertsOf } from '../../src/main/alerts'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually } from '../support/http'
import { until, usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { claimCall, claimReady } from './pg-claims'
import { receiver } from './support'

/**
 * On PostgreSQL an instance that lost a crossing's claim for its webhook stands by, asking every
 * 2 s, until the winner's delivery is done with (settled) or let go. Builds before 6acfdfbe wrote
 * a token to the claims they won but never settled nor let them go: during a rolling upgrade an
 * instance of this build that lost to one asked for that claim every 2 s until it aged out, about
 * 27 minutes with the defaults, for each such crossing. A claim held by such a build (its token
 * without this build's mark) is done with for those standing by: they stop at their first look.
 */

const h = usePostgres()
const budgets = { rules: [{ api_key_pattern: 'sk-claim-*', daily_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] }

describe('standing by for a claim an earlier build won (PostgreSQL)', () => {
  it('stops once it finds the claim held by a build that never settles it', async () => {
    const hook = await receiver()
    h.onTeardown(() => hook.close())
    const config = { budgets, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }] } }
    const url = h.database()
    const a = await pgBudgetServer(h, url, config)
    const b = await pgBudgetServer(h, url, config)
    replayJson(h.upstream, NANO_FIXTURE)
    await claimReady(a, 'sk-claim-warm-0001')
    await claimReady(b, 'sk-claim-warm-0002')
    // Claims are won as builds before 6acfdfbe won them: a bare token, which their holder never
    // settles (the UPDATE that would names the token it wrote, not this one).
    await a.store.run(`CREATE FUNCTION old_build_owner() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.owner IS NOT NULL THEN NEW.owner := gen_random_uuid()::text; END IF; RETURN NEW; END $$`)
    await a.store.run('CREATE TRIGGER old_build_owner BEFORE INSERT OR UPDATE ON alert_claims FOR EACH ROW EXECUTE FUNCTION old_build_owner()')
    const key = 'sk-claim-oldbuild-0001'
    const sent = () => hook.got.filter((g) => g.body.api_key_hash === hashKey(key))
    const standing = () => alertsOf(a.server.context).standingBy() + alertsOf(b.server.context).standingBy()
    // A crosses 50% and claims it first (B sees the crossing once A's call is stored); B loses and stands by.
    for (let i = 0; i < 2; i++) expect((await claimCall(a, key)).status).toBe(200)
    await eventually(() => sent().length === 1, 20_000)
    await until('the instance that lost the claim stands by for it', () => standing() === 1, 20_000)
    expect((await a.store.all<{ owner: string }>('SELECT owner FROM alert_claims'))[0].owner).toMatch(/^[0-9a-f-]{36}$/)
    // It looks once, and stops: the holder never settles the claim.
    await until('the instance standing by stops', () => standing() === 0, 20_000)
    expect(sent()).toHaveLength(1)
  }, 120_000)
})
