import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { getJson } from '../dashboard/seed'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { receiver } from './support'

/**
 * As ./postgres-claims-restart.test.ts, for a rolling window's threshold: the instance with the
 * team's webhook, started again (a deploy) after an instance with none crossed the window's 50%,
 * read the spend back over it and took it as announced, and the webhook never got it (a calendar
 * period's crossing was sent then; a window's was not). It is sent then, once; started again
 * later with the window still over it, the instance sends it no second time.
 */

const h = usePostgres()
const BODY = { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }] }
type Server = Awaited<ReturnType<typeof pgBudgetServer>>
const call = (s: Server, key: string) => postJson(`${s.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })

async function ready(s: Server, warm: string): Promise<void> {
  expect((await call(s, warm)).status).toBe(200)
  await eventually(async () => (await getJson(`${s.url}/api/dashboard/budgets`)).body.rules.some((r: any) => r.api_key_hash === hashKey(warm)), 20_000)
  await eventually(() => (budgetsOf(s.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
}

describe('a rolling window crossed while the instance with the webhook was down (PostgreSQL)', () => {
  it('is sent when it is up again, once', async () => {
    const hook = await receiver()
    h.onTeardown(() => hook.close())
    const budgets = { rules: [{ api_key_pattern: 'sk-wclm-*', window_hours: 5, window_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] }
    const withHook = { budgets, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 20 } }
    const url = h.database()
    const a = await pgBudgetServer(h, url, { budgets })
    const b = await pgBudgetServer(h, url, withHook)
    replayJson(h.upstream, NANO_FIXTURE)
    await ready(a, 'sk-wclm-warm-0000')
    await ready(b, 'sk-wclm-warm-0001')
    const key = 'sk-wclm-dddddddd-0004'
    const sent = () => hook.got.filter((g) => g.body.api_key_hash === hashKey(key)).map((g) => [g.body.window.period, g.body.threshold_pct])
    // B (the webhook's) goes down; two calls through A cross the window's 50%, which A announces (to no webhook).
    await b.stop()
    for (let i = 0; i < 2; i++) expect((await call(a, key)).status).toBe(200)
    await a.server.ledger.flushed()
    // B again, on the same database: it reads the window's spend back over 50%, and sends it.
    const b2 = await pgBudgetServer(h, url, withHook, b.dir)
    await eventually(() => (budgetsOf(b2.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
    await eventually(() => expect(sent()).toEqual([['window', 0.5]]), 20_000)
    // Started once more, the window still over 50%: not sent again.
    await b2.stop()
    const b3 = await pgBudgetServer(h, url, withHook, b.dir)
    await ready(b3, 'sk-wclm-warm-0001')
    expect((await call(a, key)).status).toBe(200)
    await eventually(async () => (await getJson(`${b3.url}/api/dashboard/budgets`)).body.rules.find((r: any) => r.api_key_hash === hashKey(key))?.windows[0].spent_usd >= NANO_COST * 3 * (1 - 1e-9), 20_000)
    // A crossing of B's own after that is claimed after any crossing those reads found, and its
    // alerts go to the webhook in turn: received after any such one, and the key's was not sent again.
    const later = 'sk-wclm-eeeeeeee-0005'
    for (let i = 0; i < 2; i++) expect((await call(b3, later)).status).toBe(200)
    await eventually(() => hook.got.some((g) => g.body.api_key_hash === hashKey(later)), 20_000)
    expect(sent()).toEqual([['window', 0.5]])
  }, 120_000)
})
