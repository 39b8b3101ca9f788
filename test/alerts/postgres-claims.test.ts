import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { getJson } from '../dashboard/seed'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { receiver } from './support'

/**
 * On one PostgreSQL, a threshold crossing is claimed per webhook: an instance with no webhook
 * configured claims nothing (it used to claim the crossing, and the instance with the team's
 * webhook never sent it), and a webhook gets each crossing once whichever instances see it.
 */

const h = usePostgres()
const BODY = { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }] }
type Server = Awaited<ReturnType<typeof pgBudgetServer>>
const call = (s: Server, key: string) => postJson(`${s.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })

async function listed(s: Server, pattern: string, key: string): Promise<any> {
  const body = (await getJson(`${s.url}/api/dashboard/budgets`)).body
  return body.rules.find((r: any) => r.rule.api_key_pattern === pattern && r.api_key_hash === hashKey(key))
}

describe('alert claims across instances (PostgreSQL)', () => {
  it('a crossing seen by an instance without webhooks is still sent by the instance that has them', async () => {
    const hook = await receiver()
    h.onTeardown(() => hook.close())
    const budgets = { rules: [{ api_key_pattern: 'sk-claim-*', daily_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5, 1] }] }
    const url = h.database()
    // A: no webhooks (say a second instance whose config only has the budgets); B: the team's webhook.
    const a = await pgBudgetServer(h, url, { budgets })
    const b = await pgBudgetServer(h, url, { budgets, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 20 } })
    replayJson(h.upstream, NANO_FIXTURE)
    for (const [i, s] of [a, b].entries()) {
      const warm = `sk-claim-warm-000${i}`
      expect((await call(s, warm)).status).toBe(200)
      await eventually(async () => (await listed(s, 'sk-claim-*', warm)) !== undefined, 20_000)
      await eventually(() => (budgetsOf(s.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
    }
    const key = 'sk-claim-cccccccc-0003'
    // Two calls through A: 50% of the daily limit. B counts them too (the calls feed) and sees 50% crossed.
    for (let i = 0; i < 2; i++) expect((await call(a, key)).status).toBe(200)
    await a.server.ledger.flushed()
    await eventually(async () => ((await listed(b, 'sk-claim-*', key))?.windows[0].spent_usd ?? 0) >= NANO_COST * 2 * (1 - 1e-9), 20_000)
    const sent = () => hook.got.filter((g) => g.body.api_key_hash === hashKey(key)).map((g) => g.body.threshold_pct)
    await eventually(() => expect(sent()).toEqual([0.5]), 20_000)
    // One claim, the webhook's: the instance without one made none.
    expect(await a.store.all('SELECT id FROM alert_claims')).toHaveLength(1)
    // A third instance with the same webhook sees the next calls' crossing too: still sent once.
    const c = await pgBudgetServer(h, url, { budgets, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 20 } })
    expect((await call(c, 'sk-claim-warm-0002')).status).toBe(200)
    await eventually(() => (budgetsOf(c.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
    for (let i = 0; i < 2; i++) expect((await call(a, key)).status).toBe(200)
    await eventually(() => expect(sent()).toEqual([0.5, 1]), 20_000)
    await eventually(async () => expect(await c.store.all('SELECT id FROM alert_claims')).toHaveLength(2))
    expect(sent()).toEqual([0.5, 1])
  }, 90_000)
})
