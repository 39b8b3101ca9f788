import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { getJson } from '../dashboard/seed'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { receiver } from './support'

/**
 * On one PostgreSQL, an instance with no webhook leaves the sending of a threshold it crosses to
 * the instances that have one (./postgres-claims.test.ts). The instance with the team's webhook,
 * started again (a deploy) after the crossing, read the spend back over the threshold and took it
 * as announced: the webhook never got it, though no instance ever sent it there. Its claims
 * (alert_claims) say which webhooks got a crossing: started again, it sends those that one of
 * its webhooks never got, once.
 */

const h = usePostgres()
const BODY = { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }] }
type Server = Awaited<ReturnType<typeof pgBudgetServer>>
const call = (s: Server, key: string) => postJson(`${s.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })

async function listed(s: Server, pattern: string, key: string): Promise<any> {
  const body = (await getJson(`${s.url}/api/dashboard/budgets`)).body
  return body.rules.find((r: any) => r.rule.api_key_pattern === pattern && r.api_key_hash === hashKey(key))
}

async function ready(s: Server, warm: string): Promise<void> {
  expect((await call(s, warm)).status).toBe(200)
  await eventually(async () => (await listed(s, 'sk-claim-*', warm)) !== undefined, 20_000)
  await eventually(() => (budgetsOf(s.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
}

describe('alert claims across a restart (PostgreSQL)', () => {
  it('a crossing made while the instance with the webhook was down is sent when it is up again, once', async () => {
    const hook = await receiver()
    h.onTeardown(() => hook.close())
    const budgets = { rules: [{ api_key_pattern: 'sk-claim-*', daily_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5, 1] }] }
    const withHook = { budgets, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 20 } }
    const url = h.database()
    const a = await pgBudgetServer(h, url, { budgets })
    const b = await pgBudgetServer(h, url, withHook)
    replayJson(h.upstream, NANO_FIXTURE)
    await ready(a, 'sk-claim-warm-0000')
    await ready(b, 'sk-claim-warm-0001')
    const key = 'sk-claim-dddddddd-0004'
    const sent = () => hook.got.filter((g) => g.body.api_key_hash === hashKey(key)).map((g) => g.body.threshold_pct)
    // B (the webhook's) goes down; two calls through A cross 50%, which A announces (to no webhook).
    await b.stop()
    for (let i = 0; i < 2; i++) expect((await call(a, key)).status).toBe(200)
    await a.server.ledger.flushed()
    await eventually(async () => (await a.store.all('SELECT id FROM budget_announced')).length > 0, 20_000)
    // B again, on the same database: it reads the spend back over 50%.
    const b2 = await pgBudgetServer(h, url, withHook, b.dir)
    await eventually(() => (budgetsOf(b2.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
    // The next two calls cross 100%, which B hears and sends; 50% went to the webhook too, once.
    for (let i = 0; i < 2; i++) expect((await call(a, key)).status).toBe(200)
    await eventually(() => sent().includes(1), 20_000)
    await eventually(() => expect([...sent()].sort()).toEqual([0.5, 1]), 20_000)
    expect(await a.store.all('SELECT id FROM alert_claims')).toHaveLength(2)
    // And B started once more sends neither again.
    await b2.stop()
    const b3 = await pgBudgetServer(h, url, withHook, b.dir)
    await eventually(() => (budgetsOf(b3.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
    await ready(b3, 'sk-claim-warm-0001')
    expect([...sent()].sort()).toEqual([0.5, 1])
  }, 120_000)
})
