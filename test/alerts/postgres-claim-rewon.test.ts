import { describe, expect, it } from 'vitest'
import { alertsOf } from '../../src/main/alerts'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { getJson } from '../dashboard/seed'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { claimCall, claimHook, type ClaimServer } from './pg-claims'

/**
 * On PostgreSQL a rolling window's claim can be won again once it is old enough (a crossing read
 * back, a window crossed anew). An instance shut down with the retry of an alert it had claimed
 * still waiting let its claim go by the claim's id alone: when another instance had won that row
 * again since, and sent the alert, the row deleted was that one's, and the next instance to read
 * the crossing back claimed it anew and the webhook got it a second time. An instance lets go only
 * the claim it holds (its row with the token its claim wrote).
 */

const h = usePostgres()

const thresholdDeliveries = (s: ClaimServer) => alertsOf(s.server.context).webhooks.deliveries().filter((d) => d.type === 'budget.threshold')

describe("a rolling window's claim another instance has won again (PostgreSQL)", () => {
  it('is not let go by the instance that claimed it first: no later start sends the alert again', async () => {
    const wh = await claimHook()
    h.onTeardown(() => wh.close())
    const budgets = { rules: [{ api_key_pattern: 'sk-claim-*', window_hours: 5, window_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] }
    const config = { budgets, alerts: { webhooks: [{ url: wh.url, format: 'json' }], backoff_ms: 60_000, retries: 3 } }
    const url = h.database()
    replayJson(h.upstream, NANO_FIXTURE)
    const key = 'sk-claim-rewon-0001'
    const sent = () => wh.got.filter((g) => g.api_key_hash === hashKey(key))
    // The webhook is down: A crosses the window's 50%, claims it, is refused, and its retry waits a minute.
    wh.state.up = false
    const a = await pgBudgetServer(h, url, config)
    // A's reads of the meters begun at its start end before its calls (see below).
    const feedA = budgetsOf(a.server.context).feed!
    await eventually(() => feedA.status().listening, 20_000)
    await feedA.reload()
    for (let i = 0; i < 2; i++) expect((await claimCall(a, key)).status).toBe(200)
    await a.server.ledger.flushed()
    await eventually(() => thresholdDeliveries(a).some((d) => d.attempts === 1 && d.status === 'pending' && d.last_status === 500), 20_000)
    // A read of A's meters that ends after its calls, from a snapshot without the second one
    // (counted again as missed), finds the crossing again and claims it as read back: it loses, the
    // claim being A's own and as fresh, but aged below while such a read or its claim was under
    // way, A won its own claim again, sent the alert itself and B lost it. So A's reads at its start
    // end before its calls (above), and its meters are read again now, from a snapshot that holds them.
    await feedA.reload()
    const claimed = await a.store.all<{ owner: string }>('SELECT owner FROM alert_claims')
    expect(claimed).toHaveLength(1)
    // A's claim is old enough to be won again by a read of the crossing (as one left by an
    // earlier crossing of the window is). The webhook is up; B starts, reads the crossing back,
    // wins the claim and sends it.
    await a.store.run("UPDATE alert_claims SET claimed_at = claimed_at - interval '1 hour'")
    wh.state.up = true
    const b = await pgBudgetServer(h, url, config)
    await eventually(() => sent().length === 1, 20_000)
    const rewon = await a.store.all<{ owner: string }>('SELECT owner FROM alert_claims')
    expect(rewon).toHaveLength(1)
    expect(rewon[0].owner).not.toBe(claimed[0].owner)
    await eventually(() => thresholdDeliveries(b).some((d) => d.status === 'delivered'), 20_000)
    // Delivered, B's claim is settled (held by no instance: alerts/handover.ts); read it once it is.
    await eventually(async () => (await b.store.all<{ owner: string | null }>('SELECT owner FROM alert_claims'))[0]?.owner === null, 20_000)
    const settled = await b.store.all<{ owner: string | null }>('SELECT owner FROM alert_claims')
    // A shuts down with its retry still waiting: the claim it lets go is B's now, which stands.
    expect(thresholdDeliveries(a).some((d) => d.status === 'pending')).toBe(true)
    await a.stop()
    expect(await b.store.all<{ owner: string | null }>('SELECT owner FROM alert_claims')).toEqual(settled)
    // B goes down too (C alone claims then what it reads back, and its own crossing below). C,
    // started later with the same webhook, reads the crossing back as sent.
    await b.stop()
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
