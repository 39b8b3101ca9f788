import { calcPrice } from '@pydantic/genai-prices'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { priceLibraryLoaded } from '../../src/main/pricing/library'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

// The price library is not loaded at start-up (src/main/pricing/library.ts): a moment after the
// server listens, or for the first call that comes sooner. Such a call waits for it, and is
// priced as any other. (This file's modules are its own: nothing else has loaded the library.)

let t: TestServer | undefined
let upstream: MockUpstream | undefined
afterEach(async () => {
  await t?.cleanup()
  await upstream?.close()
  t = upstream = undefined
})

describe('the price library loads after start-up', () => {
  it('a call that comes before the price library is loaded waits for it and is priced exactly', async () => {
    upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
    t = await startTestServer({}, upstream.url, undefined, { create: { apiPreloadMs: false } })
    // Start-up did not load it.
    expect(priceLibraryLoaded()).toBe(false)
    const call = await postJson(`${t.url}/openai/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-api-app-000000002' })
    expect(call.status).toBe(200)
    expect(priceLibraryLoaded()).toBe(true)
    const answer = JSON.parse(fixture('openai-chat/chat-nonstream-cached.json').toString()) as { model: string; usage: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details: { cached_tokens: number } } }
    const u = answer.usage
    const expected = calcPrice(
      { input_tokens: u.prompt_tokens, output_tokens: u.completion_tokens, cache_read_tokens: u.prompt_tokens_details.cached_tokens },
      answer.model,
      { providerId: 'openai' },
    )!.total_price
    const row = await eventually(() => {
      const db = new Database(t!.dbFile, { readonly: true })
      try {
        return db.prepare('SELECT cost_usd, priced FROM calls').get() as { cost_usd: number; priced: number } | undefined
      } finally {
        db.close()
      }
    })
    expect(row).toEqual({ cost_usd: expected, priced: 1 })
    expect(expected).toBeGreaterThan(0)
  })

})
