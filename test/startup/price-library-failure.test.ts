import { describe, expect, it, vi } from 'vitest'
import { fixture } from '../support/fixtures'
import { postJson, request } from '../support/http'
import { serversPerTest } from '../support/server'

// The price data cannot be loaded (a broken install, a corrupt package): every proxied call is
// refused, and /api/health says so rather than "ok". (The mock is this file's own.)
vi.mock('@pydantic/genai-prices', () => {
  throw new Error('corrupt price table')
})

const start = serversPerTest()

describe('/api/health when the price data cannot be loaded', () => {
  it('is ok while the prices have not been asked for, then degraded with the reason once loading them failed', async () => {
    const upstream = await start.upstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
    const t = await start.server({}, upstream.url, undefined, { create: { apiPreloadMs: false } })
    // Start-up has not loaded them (that comes a moment later): not a failure, and health does not load them.
    const early = (await request(`${t.url}/api/health`)).json()
    expect({ status: early.status, prices: early.prices }).toEqual({ status: 'ok', prices: { ready: false, last_error: null } })
    expect(t.server.context.pricer.lastError).toBeNull()

    const call = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: 'Bearer sk-x' })
    expect(call.status).toBe(500)
    const health = (await request(`${t.url}/api/health`)).json()
    expect(health.status).toBe('degraded')
    expect(health.prices.ready).toBe(false)
    // The import's error, as vitest words a mock that throws.
    expect(health.prices.last_error).toMatch(/error when mocking/)
  })
})
