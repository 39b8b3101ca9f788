import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { admin, ADMIN_CONFIG } from '../admin/support'
import { request, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { chatAnswer as answer } from './support'

const MODEL = 'gpt-6.1-sol'

/** Every rollup table's money equals the calls' (none is a subscription call here). */
function rollupsAgree(dbFile: string): void {
  const db = new Database(dbFile, { readonly: true })
  try {
    const calls = db.prepare('SELECT total(cost_usd) FROM calls').pluck().get() as number
    const close = (v: number) => expect(v).toBeCloseTo(calls, 12)
    for (const t of ['dash_5m', 'dash_hour', 'dash_day']) close(db.prepare(`SELECT total(cost_usd) FROM ${t}`).pluck().get() as number)
    for (const t of ['dash_dim_hour', 'dash_dim_day']) {
      for (const dim of ['model', 'provider', 'agent', 'session', 'api_key', 'project']) {
        close(db.prepare(`SELECT total(cost_usd) FROM ${t} WHERE dim = ?`).pluck().get(dim) as number)
      }
      const byModel = db.prepare(`SELECT total(cost_usd) FROM ${t} WHERE dim = 'model' AND key = ?`).pluck().get(MODEL) as number
      const callsOfModel = db.prepare('SELECT total(cost_usd) FROM calls WHERE model = ?').pluck().get(MODEL) as number
      expect(byModel).toBeCloseTo(callsOfModel, 12)
    }
    close(db.prepare('SELECT total(cost_usd) FROM dash_session').pluck().get() as number)
  } finally {
    db.close()
  }
}

describe('unpriced models, runtime prices and re-pricing', () => {
  let upstream: MockUpstream
  let t: TestServer
  const call = (key = 'sk-test-aaaaaaaaaaaa1111') =>
    postJson(`${t.url}/v1/chat/completions`, { model: MODEL, messages: [{ role: 'user', content: 'hi' }] }, {
      authorization: `Bearer ${key}`,
      'x-burnrate-session': 's1',
    })

  beforeAll(async () => {
    upstream = await startMockUpstream(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: answer(MODEL, 1_000_000, 100_000),
    }))
    t = await startTestServer(ADMIN_CONFIG, upstream.url)
  })
  afterAll(async () => {
    await t.cleanup()
    await upstream.close()
  })

  it('lists a model the prices do not know, with its calls and tokens', async () => {
    expect((await call()).status).toBe(200)
    expect((await call('sk-test-bbbbbbbbbbbb2222')).status).toBe(200)
    const r = await request(`${t.url}/api/dashboard/unpriced`)
    expect(r.status).toBe(200)
    const m = r.json().models
    expect(m).toHaveLength(1)
    expect(m[0]).toMatchObject({ provider: 'openai', model: MODEL, requests: 2, input_tokens: 2_000_000, output_tokens: 200_000 })
    expect(Date.parse(m[0].first_seen_at)).toBeLessThanOrEqual(Date.parse(m[0].last_seen_at))
    const summary = (await request(`${t.url}/api/dashboard/summary`)).json()
    expect(summary.today_spend_usd).toBe(0)
  })

  it('refuses bad prices with the field named, and unknown providers', async () => {
    let r = await admin(t.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: -1, output_mtok: 2 } })
    expect(r.status).toBe(400)
    expect(r.json().error).toMatchObject({ type: 'invalid_request', param: 'input_mtok' })
    r = await admin(t.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 1, output_mtok: 2, per_call: 1 } })
    expect(r.json().error.param).toBe('per_call')
    r = await admin(t.url, 'PUT', `/prices/nope/${MODEL}`, { body: { input_mtok: 1, output_mtok: 2 } })
    expect(r.status).toBe(404)
    r = await admin(t.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 1, output_mtok: 2 }, token: 'wrong-token' })
    expect(r.status).toBe(401)
  })

  it('prices later calls once a price is set, and re-prices the past ones with the rollups in step', async () => {
    const put = await admin(t.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 3, output_mtok: 12 } })
    expect(put.status).toBe(200)
    expect(put.json()).toMatchObject({ provider: 'openai', model: MODEL, input_mtok: 3, output_mtok: 12, cache_read_mtok: null, cache_write_mtok: null })
    // A later call: 1M input at $3 + 100k output at $12 per million.
    expect((await call()).status).toBe(200)
    await t.server.ledger.flush()
    const last = t.server.db.prepare('SELECT cost_usd, priced FROM calls ORDER BY id DESC LIMIT 1').get() as { cost_usd: number; priced: number }
    expect(last).toEqual({ cost_usd: 4.2, priced: 1 })
    expect((await request(`${t.url}/api/dashboard/unpriced`)).json().models[0].requests).toBe(2)

    const rep = await admin(t.url, 'POST', `/prices/openai/${MODEL}/reprice`)
    expect(rep.status).toBe(200)
    expect(rep.json()).toMatchObject({ provider: 'openai', model: MODEL, repriced: 2, unpriced: 0, cost_usd_before: 0 })
    expect(rep.json().cost_usd_after).toBeCloseTo(8.4, 12)
    expect((await request(`${t.url}/api/dashboard/unpriced`)).json().models).toEqual([])
    const calls = (await request(`${t.url}/api/dashboard/export?format=json`)).json().calls
    expect(calls.map((c: { cost_usd: number; priced: boolean }) => [c.cost_usd, c.priced])).toEqual([
      [4.2, true],
      [4.2, true],
      [4.2, true],
    ])
    const summary = (await request(`${t.url}/api/dashboard/summary`)).json()
    expect(summary.today_spend_usd).toBeCloseTo(12.6, 12)
    // Budgets read today's spend per key from memory: the re-priced calls count there too.
    const keys = (await admin(t.url, 'GET', '/api-keys')).json() as { spend_today_usd: number }[]
    const spent = keys.reduce((s, k) => s + k.spend_today_usd, 0)
    expect(spent).toBeCloseTo(12.6, 12)
    rollupsAgree(t.dbFile)

    // Re-pricing again changes nothing.
    expect((await admin(t.url, 'POST', `/prices/openai/${MODEL}/reprice`)).json().repriced).toBe(0)
  })

  it('keeps the price across a restart, and DELETE removes it', async () => {
    t = await t.restart()
    const list = (await admin(t.url, 'GET', '/prices')).json().prices
    expect(list).toHaveLength(1)
    expect((await call()).status).toBe(200)
    await t.server.ledger.flush()
    expect(t.server.db.prepare('SELECT cost_usd FROM calls ORDER BY id DESC LIMIT 1').pluck().get()).toBe(4.2)

    expect((await admin(t.url, 'DELETE', `/prices/openai/${MODEL}`)).status).toBe(204)
    expect((await admin(t.url, 'DELETE', `/prices/openai/${MODEL}`)).status).toBe(404)
    expect((await call()).status).toBe(200)
    expect((await request(`${t.url}/api/dashboard/unpriced`)).json().models[0]).toMatchObject({ model: MODEL, requests: 1 })
  })

  it('says where the price data comes from', async () => {
    const r = (await request(`${t.url}/api/dashboard/prices`)).json()
    expect(r).toMatchObject({ source: 'bundled', updated_at: null, auto_update: false })
  })
})
