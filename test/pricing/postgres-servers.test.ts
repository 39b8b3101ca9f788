import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'
import { chatAnswer } from './support'

/**
 * Runtime prices (admin API) on two real servers in PostgreSQL mode (`storage.url`), each with
 * its own data folder, on one database: a price set or deleted through one prices the other's
 * calls; re-pricing through one moves the shared budget spend both admit against.
 */

const MODEL = 'gpt-6.1-sol-shared'

// 1M input and 100k output tokens of a model the bundled prices do not know.
const h = usePostgres({
  upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: chatAnswer(MODEL, 1_000_000, 100_000) }),
})

const server = (url: string, dir?: string, config: Record<string, unknown> = {}): Promise<TestServer> =>
  h.server({ url, dir, config: { ...ADMIN_CONFIG, ...config } })

let n = 0
/** One call through `t` under a fresh key; resolves to what the server recorded for it. */
async function call(t: TestServer): Promise<{ cost_usd: number; priced: boolean }> {
  const key = `sk-prices-shared-aaaa-${String(++n).padStart(4, '0')}`
  const recorded = new Promise<{ cost_usd: number; priced: boolean }>((resolve) => {
    const stop = t.server.context.ledger.onCall((c) => {
      if (c.api_key_hash !== hashKey(key)) return
      stop()
      resolve({ cost_usd: c.cost_usd, priced: Boolean(c.priced) })
    })
  })
  const r = await postJson(`${t.url}/v1/chat/completions`, { model: MODEL, messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${key}` })
  expect(r.status).toBe(200)
  return recorded
}

describe('runtime prices shared through PostgreSQL', () => {
  it('a price PUT on one server prices the next call on the other; a DELETE on the other is seen by the first', async () => {
    const url = h.database()
    const a = await server(url)
    const b = await server(url)
    expect(await call(b)).toEqual({ cost_usd: 0, priced: false })

    const put = await admin(a.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 3, output_mtok: 12 } })
    expect(put.status).toBe(200)
    // The writer prices its very next call with it: 1M input at $3 + 100k output at $12 per million.
    expect(await call(a)).toEqual({ cost_usd: 4.2, priced: true })
    // The other server picks it up within its poll.
    const priced = await eventually(async () => {
      const c = await call(b)
      return c.priced ? c : null
    }, 15_000)
    expect(priced).toEqual({ cost_usd: 4.2, priced: true })
    // Listed by both admin APIs, from the one table; the database holds the call at that price.
    expect((await admin(b.url, 'GET', '/prices')).json().prices).toEqual([put.json()])
    // Both servers' calls at that price: each ledger writes its own.
    await Promise.all([a.server.ledger.flushed(), b.server.ledger.flushed()])
    const rows = await h.store(url).all<{ cost_usd: number }>('SELECT cost_usd FROM calls WHERE priced = 1 AND model = @m', { m: MODEL })
    expect(rows.length).toBeGreaterThanOrEqual(2)
    for (const r of rows) expect(r.cost_usd).toBe(4.2)

    // A changed price through B, then a DELETE through B: A follows both.
    expect((await admin(b.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 1, output_mtok: 10 } })).status).toBe(200)
    await eventually(async () => (await call(a)).cost_usd === 2, 15_000)
    expect((await admin(b.url, 'DELETE', `/prices/openai/${MODEL}`)).status).toBe(204)
    expect(await call(b)).toEqual({ cost_usd: 0, priced: false })
    await eventually(async () => !(await call(a)).priced, 15_000)
    expect((await admin(a.url, 'GET', '/prices')).json().prices).toEqual([])
    expect((await admin(a.url, 'DELETE', `/prices/openai/${MODEL}`)).status).toBe(404)
  }, 90_000)

  it('a re-price through one server right after a price was set or deleted through the other uses it (an admin behind a load balancer)', async () => {
    const url = h.database()
    const [a, b] = [await server(url), await server(url)]
    const model = `${MODEL}-lb`
    h.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: chatAnswer(model, 1_000_000, 100_000) }))
    try {
      await lbScenario(a, b, model)
    } finally {
      h.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: chatAnswer(MODEL, 1_000_000, 100_000) }))
    }
  })

  async function lbScenario(a: TestServer, b: TestServer, model: string): Promise<void> {
    for (let i = 0; i < 4; i++) {
      const r = await postJson(`${[a, b][i % 2].url}/v1/chat/completions`, { model, messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-prices-lb-aaaaaaaa-01' })
      expect(r.status).toBe(200)
    }
    for (const t of [a, b]) await t.server.ledger.flushed()
    expect((await admin(a.url, 'PUT', `/prices/openai/${model}`, { body: { input_mtok: 2, output_mtok: 10 } })).status).toBe(200)
    // At once, on the other server: each call 1M x $2 + 100k x $10 = $3.
    expect((await admin(b.url, 'POST', `/prices/openai/${model}/reprice`)).json()).toMatchObject({ repriced: 4, unpriced: 0, cost_usd_after: 12 })
    expect((await admin(b.url, 'DELETE', `/prices/openai/${model}`)).status).toBe(204)
    // The price is gone for every instance: nothing is re-priced with it.
    expect((await admin(a.url, 'POST', `/prices/openai/${model}/reprice?all=true`)).json()).toMatchObject({ repriced: 0 })
  }

  it('a server restarted while PostgreSQL is away starts at once with the prices it last read, and picks up changes when it answers', async () => {
    const url = h.database()
    const a = await server(url)
    const b = await server(url)
    expect((await admin(a.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 3, output_mtok: 12 } })).status).toBe(200)
    await eventually(async () => (await call(b)).priced, 15_000)
    await b.stop()
    h.pg.stopServer()
    let again: TestServer
    try {
      again = await server(url, b.dir)
      expect(await call(again)).toEqual({ cost_usd: 4.2, priced: true })
      // A write meanwhile is refused in the contract's error shape, and changes nothing.
      const refused = await admin(again.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 5, output_mtok: 5 } })
      expect(refused.status).toBe(500)
      expect(refused.json().error.type).toBeTruthy()
      expect(await call(again)).toEqual({ cost_usd: 4.2, priced: true })
    } finally {
      h.pg.startServer()
    }
    // Changed through A once the database is back: the restarted server follows.
    await eventually(async () => (await admin(a.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 1, output_mtok: 10 } })).status === 200, 30_000)
    await eventually(async () => (await call(again)).cost_usd === 2, 30_000)
  }, 120_000)

  it('re-pricing through one server moves the shared spend rows: both refuse over the limit, and admit again when it drops', async () => {
    const url = h.database()
    const KEY = 'sk-reprice-pg-aaaaaaaaaaaa'
    const budgets = { budgets: { rules: [{ api_key_pattern: 'sk-reprice-pg-*', daily_limit_usd: 5, action: 'block' }] }, timezone: 'UTC' }
    const a = await server(url, undefined, budgets)
    const b = await server(url, undefined, budgets)
    const send = (t: TestServer) =>
      postJson(`${t.url}/v1/chat/completions`, { model: MODEL, messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${KEY}` })
    const store = h.store(url)
    const spent = async () =>
      (await store.get<{ spent_usd: number }>("SELECT spent_usd FROM budget_spend WHERE api_key_hash = @k AND period = 'daily'", { k: hashKey(KEY) }))!.spent_usd

    // Unpriced: $0 each, admitted.
    expect((await send(a)).status).toBe(200)
    expect((await send(b)).status).toBe(200)
    await Promise.all([a.server.ledger.flushed(), b.server.ledger.flushed()])
    expect(await spent()).toBe(0)

    expect((await admin(a.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 3, output_mtok: 12 } })).status).toBe(200)
    expect((await admin(a.url, 'POST', `/prices/openai/${MODEL}/reprice`)).json()).toMatchObject({ repriced: 2, unpriced: 0 })
    // In the transactions that change the calls: the row holds the new costs when the answer comes.
    expect(await spent()).toBeCloseTo(8.4, 9)
    for (const t of [a, b]) {
      const r = await send(t)
      expect(r.status).toBe(429)
      expect(r.json().error).toMatchObject({ type: 'budget_exceeded', period: 'daily', limit_usd: 5 })
    }

    // Down again with a lower price: $1.20 a call, under the limit; B, which was refused, asks again.
    expect((await admin(a.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 1, output_mtok: 2 } })).status).toBe(200)
    expect((await admin(a.url, 'POST', `/prices/openai/${MODEL}/reprice?all=true`)).json()).toMatchObject({ repriced: 2 })
    expect(await spent()).toBeCloseTo(2.4, 9)
    await eventually(async () => (await send(b)).status === 200, 15_000)
  }, 120_000)
})
