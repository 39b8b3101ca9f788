import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { getJson } from '../dashboard/seed'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { slowDownReceiver } from './support'

/**
 * On PostgreSQL an alert is claimed for a webhook before it is sent (./postgres-claims.test.ts),
 * and its retries wait in memory: minutes when the webhook's Retry-After asks for them (README:
 * Alerts). An instance shut down (a deploy) while a retry waited kept the claim: started again it
 * read the crossing back as sent, no instance sent it, and the alert was lost. The claim of a
 * retry dropped at shutdown is let go, and the crossing read back is sent then, once.
 */

const h = usePostgres()
const BODY = { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }] }
type Server = Awaited<ReturnType<typeof pgBudgetServer>>
const call = (s: Server, key: string) => postJson(`${s.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })

async function listed(s: Server, key: string): Promise<any> {
  const body = (await getJson(`${s.url}/api/dashboard/budgets`)).body
  return body.rules.find((r: any) => r.rule.api_key_pattern === 'sk-wait-*' && r.api_key_hash === hashKey(key))
}

// Two calls of a key reach 50%; the warm-up's one call crosses nothing.
const budgets = { rules: [{ api_key_pattern: 'sk-wait-*', daily_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] }
const deliveries = async (s: Server) => (await getJson(`${s.url}/api/dashboard/alerts`)).body.deliveries as any[]

describe('a retry waiting on Retry-After (PostgreSQL)', () => {
  it('while one instance waits to send a crossing, another with the same webhook does not send it', async () => {
    const hook = await slowDownReceiver({ seconds: 2 })
    h.onTeardown(() => hook.close())
    const withHook = { budgets, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 20 } }
    const url = h.database()
    const a = await pgBudgetServer(h, url, withHook)
    const b = await pgBudgetServer(h, url, withHook)
    replayJson(h.upstream, NANO_FIXTURE)
    for (const [i, s] of [a, b].entries()) {
      const warm = `sk-wait-warm-000${i}`
      expect((await call(s, warm)).status).toBe(200)
      await eventually(async () => (await listed(s, warm)) !== undefined, 20_000)
      await eventually(() => (budgetsOf(s.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
    }
    const key = 'sk-wait-ffffffff-0006'
    for (let i = 0; i < 2; i++) expect((await call(a, key)).status).toBe(200)
    await a.server.ledger.flushed()
    // Both see 50% crossed; the one that claims it is refused (429, Retry-After: 2) and waits.
    await eventually(async () => ((await listed(b, key))?.windows[0].spent_usd ?? 0) >= NANO_COST * 2 * (1 - 1e-9), 20_000)
    await eventually(() => hook.got.length === 1, 20_000)
    const mine = (d: any[]) => d.filter((x) => x.type === 'budget.threshold')
    const both = [...mine(await deliveries(a)), ...mine(await deliveries(b))]
    expect(both).toHaveLength(1)
    expect(both[0]).toMatchObject({ status: 'delivered', attempts: 2 })
    expect(hook.got[0].body.api_key_hash).toBe(hashKey(key))
    // The other instance tried neither before the time asked nor after it.
    expect(hook.early()).toBe(0)
    expect(hook.posts()).toBe(2)
    expect(await a.store.all('SELECT id FROM alert_claims')).toHaveLength(1)
  }, 90_000)


  it('dropped at shutdown is sent by the instance started again, once', async () => {
    // Rate-limited for 10 minutes (capped at 5) on the first POST; takes the next ones.
    const hook = await slowDownReceiver({ seconds: 600, refuseEarly: false })
    h.onTeardown(() => hook.close())
    const withHook = { budgets, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 20 } }
    const url = h.database()
    const b = await pgBudgetServer(h, url, withHook)
    replayJson(h.upstream, NANO_FIXTURE)
    const key = 'sk-wait-eeeeeeee-0005'
    const sent = () => hook.got.filter((g) => g.body.api_key_hash === hashKey(key)).map((g) => g.body.threshold_pct)
    for (let i = 0; i < 2; i++) expect((await call(b, key)).status).toBe(200)
    // Claimed, tried once, refused with a Retry-After: the retry waits.
    await eventually(async () => (await getJson(`${b.url}/api/dashboard/alerts`)).body.deliveries[0]?.last_status === 429, 20_000)
    expect(await b.store.all('SELECT id FROM alert_claims')).toHaveLength(1)
    await b.stop()
    expect(hook.posts()).toBe(1)
    // Started again on the same database, it reads the spend back over 50% and sends it.
    const b2 = await pgBudgetServer(h, url, withHook, b.dir)
    await eventually(() => (budgetsOf(b2.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
    await eventually(() => expect(sent()).toEqual([0.5]), 20_000)
    await eventually(async () => expect(await b2.store.all('SELECT id FROM alert_claims')).toHaveLength(1))
    // And once more: its claim stands now, so a third start sends nothing.
    await b2.stop()
    const b3 = await pgBudgetServer(h, url, withHook, b.dir)
    await eventually(() => (budgetsOf(b3.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
    expect((await call(b3, 'sk-wait-warm-0001')).status).toBe(200)
    await eventually(async () => (await getJson(`${b3.url}/api/dashboard/budgets`)).body.rules.some((r: any) => r.api_key_hash === hashKey('sk-wait-warm-0001')), 20_000)
    expect(sent()).toEqual([0.5])
  }, 120_000)
})
