import { describe, expect, it } from 'vitest'
import { priceLibraryLoaded } from '../../src/main/pricing/library'
import type { ApiApp } from '../../src/main/server/api-app'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { type TestServer, serversPerTest } from '../support/server'

// Everything that is not a proxied call is an express app built when first needed (express and
// its packages are 80-100 ms of a slow machine's start-up that no proxied call needs): health and
// proxied calls are answered before it exists; the first request for it, or a moment after the
// server listens, builds it; requests that come while it loads wait for it and are answered.

const start = serversPerTest()

const apiApp = (s: TestServer) => s.server.context.app as ApiApp

describe('the API app is built when first needed', () => {
  it('health and proxied calls are answered without it; the first dashboard requests build it and are all answered', async () => {
    const upstream = await start.upstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
    const t = await start.server({ admin: { enabled: true, token: 'admin-token-for-the-test' } }, upstream.url, undefined, { create: { apiPreloadMs: false } })

    const health = await request(`${t.url}/api/health`)
    expect(health.status).toBe(200)
    expect(health.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(health.json()).toMatchObject({ status: 'ok', ledger: { writable: true, pending: 0, dropped: 0 } })
    expect(typeof health.json().version).toBe('string')
    // Spelled as express would match it: any case, one trailing slash, any query; HEAD has no body.
    expect((await request(`${t.url}/API/Health/?probe=1`)).json().status).toBe('ok')
    const head = await request(`${t.url}/api/health`, { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(head.body.length).toBe(0)

    const call = await postJson(`${t.url}/openai/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-api-app-000000001' })
    expect(call.status).toBe(200)
    expect(apiApp(t).built).toBe(false)

    // Sent together before it exists: each waits for it, and each is answered as before.
    const [summary, rules, missing, page] = await Promise.all([
      eventually(async () => {
        const r = await request(`${t.url}/api/dashboard/summary`)
        return r.json().today_requests === 1 ? r : undefined
      }),
      request(`${t.url}/api/admin/budgets/rules`, { headers: { authorization: 'Bearer admin-token-for-the-test' } }),
      request(`${t.url}/api/nothing-here`),
      request(`${t.url}/api/admin/budgets/rules`, { method: 'POST', headers: { authorization: 'Bearer admin-token-for-the-test', 'content-type': 'text/plain' }, body: 'x' }),
    ])
    expect(summary!.status).toBe(200)
    expect(rules.status).toBe(200)
    expect(Array.isArray(rules.json())).toBe(true)
    expect(missing.status).toBe(404)
    expect(missing.json().error.type).toBe('not_found')
    expect(page.status).toBe(415)
    expect(apiApp(t).built).toBe(true)
  })

  it('a moment after the server listens it is built with no request for it', async () => {
    const t = await start.server({}, undefined, undefined, { create: { apiPreloadMs: 50 } })
    await eventually(() => apiApp(t).built || undefined)
    // The price library loads with it (the routes price: re-pricing, the dashboard's costs).
    expect(priceLibraryLoaded()).toBe(true)
    expect((await request(`${t.url}/api/dashboard/summary`)).status).toBe(200)
  })
})
