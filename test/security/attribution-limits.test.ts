import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_LABEL } from '../../src/main/proxy/attribution'
import { fixture } from '../support/fixtures'
import { request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/** X-Burnrate-Agent, -Session and -Tenant are cut to MAX_LABEL characters (the README says so); the call goes through. */
let upstream: MockUpstream
let t: TestServer
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
  t = await startTestServer({}, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

describe('attribution values', () => {
  it('a 14,000-character agent, and long sessions and tenants, are is stored cut to the limit', async () => {
    const res = await request(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer sk-long-labels-000000001',
        'x-burnrate-agent': 'A'.repeat(14_000),
        'x-burnrate-session': 'S'.repeat(1_000),
        'x-burnrate-tenant': 'T'.repeat(1_000),
      },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(res.status).toBe(200)
    t.server.ledger.flush()
    const db = new Database(t.dbFile, { readonly: true })
    try {
      const row = db.prepare('SELECT agent, session, tenant FROM calls').get() as Record<string, string>
      expect(MAX_LABEL).toBe(200)
      expect(row).toEqual({ agent: 'A'.repeat(200), session: 'S'.repeat(200), tenant: 'T'.repeat(200) })
    } finally {
      db.close()
    }
  })

  it('a request naming a 2,000,000-character model is recorded with the name cut to the limit, so pricing it reads 200 characters', async () => {
    const model = 'gpt-4o-mini-' + 'x'.repeat(2_000_000)
    const res = await request(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-long-model-0000000001' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(res.status).toBe(200)
    t.server.ledger.flush()
    const db = new Database(t.dbFile, { readonly: true })
    try {
      // The answer names its own model (gpt-4o-mini-2024-07-18); the request's is kept cut.
      const row = db.prepare("SELECT requested_model FROM calls ORDER BY id DESC LIMIT 1").get() as { requested_model: string }
      expect(row.requested_model).toBe(model.slice(0, MAX_LABEL))
    } finally {
      db.close()
    }
  })

  it("an answer naming a 2,000,000-character model (an OpenAI-compatible server echoing the request's) is priced and recorded with the name cut to the limit", async () => {
    const model = 'gpt-4o-mini-' + 'y'.repeat(2_000_000)
    const answer = JSON.parse(fixture('openai-chat/chat-nonstream-cached.json').toString('utf8'))
    upstream.setResponder((req) => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...answer, model: JSON.parse(req.body.toString('utf8')).model }),
    }))
    try {
      const res = await request(`${t.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-long-model-0000000002' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
      })
      expect(res.status).toBe(200)
      expect(res.json().model).toBe(model) // the client gets the answer as it came
    } finally {
      upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
    }
    t.server.ledger.flush()
    const db = new Database(t.dbFile, { readonly: true })
    try {
      const row = db.prepare('SELECT model, requested_model FROM calls ORDER BY id DESC LIMIT 1').get() as { model: string; requested_model: string | null }
      expect(row.model).toBe(model.slice(0, MAX_LABEL))
      expect(row.requested_model).toBeNull() // the same name as the request's, cut alike
    } finally {
      db.close()
    }
  })
})
