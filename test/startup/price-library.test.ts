import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { calcPrice, type Provider } from '@pydantic/genai-prices'
import Database from 'better-sqlite3'
import { describe, expect, it, onTestFinished } from 'vitest'
import { priceLibraryLoaded } from '../../src/main/pricing/library'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { newerPriceData } from '../support/price-data'
import { type TestServer, serversPerTest } from '../support/server'

// The price library is not loaded at start-up (src/main/pricing/library.ts): a moment after the
// server listens, or for the first call that comes sooner. Such a call waits for it, and for the
// data folder's cached newer price data, and is priced as any other. (The library's module state
// is this file's own: nothing else has loaded it before the first test.)

const start = serversPerTest()
/** A mock upstream that answers every call with a recorded Chat Completions answer. */
const openaiUpstream = () => start.upstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))

/** The one call the server recorded (its cost and whether it was priced), once it is written. */
function recordedCall(s: TestServer): { cost_usd: number; priced: number } | undefined {
  const db = new Database(s.dbFile, { readonly: true })
  try {
    return db.prepare('SELECT cost_usd, priced FROM calls').get() as { cost_usd: number; priced: number } | undefined
  } finally {
    db.close()
  }
}

describe('the price library loads after start-up', () => {
  it('a call that comes before the price library is loaded waits for it and is priced exactly', async () => {
    const upstream = await openaiUpstream()
    const t = await start.server({}, upstream.url, undefined, { create: { apiPreloadMs: false } })
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
    const row = await eventually(() => recordedCall(t))
    expect(row).toEqual({ cost_usd: expected, priced: 1 })
    expect(expected).toBeGreaterThan(0)
  })


  it('a call waits until the prices are ready, the steps after the library included (the cached newer data)', async () => {
    const upstream = await openaiUpstream()
    const t = await start.server({}, upstream.url, undefined, { create: { apiPreloadMs: false } })
    const pricer = t.server.context.pricer
    const model = 'gpt-4o-mini-2024-07-18'
    // A slow step standing in for reading the cached data: it gives the model a price of its own.
    pricer.prepareWith(async () => {
      await new Promise((r) => setTimeout(r, 300))
      pricer.setRuntime([{ provider: 'openai', model, input_mtok: 100, output_mtok: 200 }])
    })
    const call = await postJson(`${t.url}/openai/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-api-app-000000004' })
    expect(call.status).toBe(200)
    const row = await eventually(() => recordedCall(t))
    const own = { id: 'x', name: 'x', api_pattern: '.*', models: [{ id: model, match: { equals: model }, prices: { input_mtok: 100, output_mtok: 200 } }] } as Provider
    const expected = calcPrice({ input_tokens: 1149, cache_read_tokens: 1024, output_tokens: 353 }, model, { provider: own })!.total_price
    expect(expected).toBeGreaterThan(0.1)
    expect(row).toEqual({ cost_usd: expected, priced: 1 })
  })

  it('a call that comes first is priced with the newer price data the data folder holds, not the bundled data', async () => {
    // A cached copy of newer data, as the price updater keeps it, that prices the fixture's model at $100/$200 per million.
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-cached-prices-'))
    // The server's cleanup removes its data dir; this covers a server that did not start.
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const model = 'gpt-4o-mini-2024-07-18'
    const providers = await newerPriceData({ openai: [{ id: model, match: { equals: model }, prices: { input_mtok: 100, output_mtok: 200 } }] })
    writeFileSync(join(dir, 'prices.json'), JSON.stringify({ updated_at: '2026-11-30T00:00:00.000Z', fetched_at: new Date().toISOString(), providers }))
    const upstream = await openaiUpstream()
    const t = await start.server({}, upstream.url, dir, { create: { apiPreloadMs: false } })
    const call = await postJson(`${t.url}/openai/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-api-app-000000003' })
    expect(call.status).toBe(200)
    const row = await eventually(() => recordedCall(t))
    // 1,149 prompt tokens (1,024 of them cached reads, priced at the input rate here: the model gives no cache rate) and 353 output tokens.
    const expected = calcPrice({ input_tokens: 1149, cache_read_tokens: 1024, output_tokens: 353 }, model, { provider: providers.find((p) => p.id === 'openai')! })!.total_price
    expect(expected).toBeGreaterThan(0.1)
    expect(row).toEqual({ cost_usd: expected, priced: 1 })
  })

  it('/api/health is degraded while the last attempt to get the prices ready failed, and ok again once one succeeds', async () => {
    const upstream = await openaiUpstream()
    const t = await start.server({}, upstream.url, undefined, { create: { apiPreloadMs: false } })
    const pricer = t.server.context.pricer
    let failures = 1
    pricer.prepareWith(async () => {
      if (failures-- > 0) throw new Error('cached price data unreadable')
    })
    const send = () => postJson(`${t.url}/openai/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-api-app-000000005' })
    const health = async () => (await request(`${t.url}/api/health`)).json()
    expect((await send()).status).toBe(500)
    expect(await health()).toMatchObject({ status: 'degraded', prices: { ready: false, last_error: 'cached price data unreadable' } })
    // The next call tries again, and succeeds.
    expect((await send()).status).toBe(200)
    expect(await health()).toMatchObject({ status: 'ok', prices: { ready: true, last_error: null } })
  })
})
