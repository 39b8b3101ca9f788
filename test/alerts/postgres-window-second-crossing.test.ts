import { afterEach, describe, expect, it, vi } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { getJson } from '../dashboard/seed'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { type ClaimServer, claimCall } from './pg-claims'
import { receiver } from './support'

/**
 * A rolling window re-arms a threshold once its spend is back under it: a server left running
 * sends each crossing. Crossed a second time while the instance with the team's webhook was down
 * (a deploy), it was not sent when that instance started again: the crossing read back was
 * claimed only if no instance had ever sent that threshold to the webhook, and the first crossing
 * had been. It is sent then, once; the first crossing is not sent again at a restart.
 */

const h = usePostgres()
afterEach(() => {
  vi.useRealTimers()
})

const HOUR = 3600_000

describe('a rolling window crossed a second time while the instance with the webhook was down (PostgreSQL)', () => {
  it('is sent when it is up again, once, and the first crossing is not sent again', async () => {
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true })
    const t0 = Date.now()
    const hook = await receiver()
    h.onTeardown(() => hook.close())
    const budgets = { rules: [{ api_key_pattern: 'sk-claim-*', window_hours: 5, window_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] }
    const withHook = { budgets, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 20 } }
    const url = h.database()
    const a = await pgBudgetServer(h, url, { budgets })
    const b = await pgBudgetServer(h, url, withHook)
    replayJson(h.upstream, NANO_FIXTURE)
    const key = 'sk-claim-dddddddd-0002'
    const sent = () => hook.got.filter((g) => g.body.api_key_hash === hashKey(key)).map((g) => g.body.threshold_pct)
    const spent = async (s: ClaimServer) => (await getJson(`${s.url}/api/dashboard/budgets`)).body.rules.find((r: any) => r.api_key_hash === hashKey(key))?.windows[0].spent_usd ?? 0
    const reloaded = (s: ClaimServer) => eventually(() => (budgetsOf(s.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
    await reloaded(a)
    await reloaded(b)
    // Both up: two calls through A cross the window's 50%, and B sends it.
    for (let i = 0; i < 2; i++) expect((await claimCall(a, key)).status).toBe(200)
    await eventually(() => expect(sent()).toEqual([0.5]), 20_000)
    // B goes down. Five hours and two minutes later (PostgreSQL's clock with the machine's) the
    // calls have left the window, and two more through A cross its 50% again.
    await b.stop()
    vi.setSystemTime(t0 + 5 * HOUR + 2 * 60_000)
    await a.store.run("UPDATE alert_claims SET claimed_at = claimed_at - interval '5 hours 2 minutes'")
    await eventually(async () => (await spent(a)) === 0, 20_000)
    for (let i = 0; i < 2; i++) expect((await claimCall(a, key)).status).toBe(200)
    await a.server.ledger.flushed()
    // B again: it reads the window over 50%, crossed since it last sent it, and sends it.
    const b2 = await pgBudgetServer(h, url, withHook, b.dir)
    await reloaded(b2)
    await eventually(() => expect(sent()).toEqual([0.5, 0.5]), 20_000)
    // Started once more with the window still over 50% (a third call): neither crossing again.
    await b2.stop()
    const b3 = await pgBudgetServer(h, url, withHook, b.dir)
    await reloaded(b3)
    expect((await claimCall(a, key)).status).toBe(200)
    await eventually(async () => (await spent(b3)) >= NANO_COST * 3 * (1 - 1e-9), 20_000)
    // A crossing of B's own after that is claimed after any crossing those reads found, and its
    // alerts go to the webhook in turn: received after any such one, and neither was sent again.
    const later = 'sk-claim-eeeeeeee-0003'
    for (let i = 0; i < 2; i++) expect((await claimCall(b3, later)).status).toBe(200)
    await eventually(() => hook.got.some((g) => g.body.api_key_hash === hashKey(later)), 20_000)
    expect(sent()).toEqual([0.5, 0.5])
  }, 120_000)
})
