import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { getJson, keyHash } from './seed'

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: fixture('openai-chat/chat-nonstream-cached.json'),
  }))
  t = await startTestServer({ timezone: 'UTC' }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

describe('calls through the proxy', () => {
  it('show in every endpoint at once, with the cost the ledger recorded', async () => {
    const key = 'sk-proj-dashboard-test-9f3a'
    for (let i = 0; i < 3; i++) {
      const r = await postJson(
        `${t.url}/v1/chat/completions`,
        { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
        { authorization: `Bearer ${key}`, 'x-burnrate-tenant': 'acme', 'x-burnrate-agent': 'bot', 'x-burnrate-session': 'run-1' },
      )
      expect(r.status).toBe(200)
    }
    // No waiting for the ledger's flush interval: the dashboard writes what it holds first.
    const summary = (await getJson(`${t.url}/api/dashboard/summary?tenant=acme`)).body
    const db = new Database(t.dbFile, { readonly: true })
    const rows = db.prepare('SELECT cost_usd, input_tokens, cache_read_tokens FROM calls ORDER BY id').all() as any[]
    db.close()
    expect(rows).toHaveLength(3)
    expect(rows[0]).toMatchObject({ input_tokens: 1149, cache_read_tokens: 1024 })
    expect(rows[0].cost_usd).toBeGreaterThan(0)
    const total = rows.reduce((s, r) => s + r.cost_usd, 0)
    expect(summary.today_requests).toBe(3)
    expect(summary.today_spend_usd).toBeCloseTo(total, 15)
    expect(summary.active_sessions).toBe(1)

    const costs = (await getJson(`${t.url}/api/dashboard/costs?group_by=api_key&tenant=acme`)).body.rows
    expect(costs).toEqual([
      {
        key: keyHash(key),
        key_hint: 'sk-…9f3a',
        provider: null,
        requests: 3,
        input_tokens: 3 * 1149,
        output_tokens: 3 * 353,
        cache_read_tokens: 3 * 1024,
        cache_write_tokens: 0,
        cost_usd: expect.closeTo(total, 15),
        unpriced_requests: 0,
      },
    ])
    const sessions = (await getJson(`${t.url}/api/dashboard/sessions`)).body.sessions
    expect(sessions).toMatchObject([{ session: 'run-1', agent: 'bot', tenant: 'acme', requests: 3, status: 'active' }])
    const exp = (await getJson(`${t.url}/api/dashboard/export?range=30m`)).body.calls
    expect(exp.map((c: any) => c.cost_usd)).toEqual(rows.map((r) => r.cost_usd))
    expect(exp[0]).toMatchObject({ provider: 'openai', model: 'gpt-4o-mini-2024-07-18', tenant: 'acme', priced: true, estimated: false, streamed: false })
  })
})
