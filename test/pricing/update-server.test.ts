import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { type Provider, waitForUpdate } from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/** A server's price update from a local price-data server: the next call of a new model is priced. */
describe('price data updated while the server runs', () => {
  let prices: http.Server
  let upstream: MockUpstream
  let t: TestServer

  beforeAll(async () => {
    // The bundled data with one model it lacks (data missing a provider would be refused).
    const bundled = (await waitForUpdate())!
    const data = bundled.map((p: Provider) =>
      p.id === 'openai' ? { ...p, models: [{ id: 'gpt-6.1-sol', match: { equals: 'gpt-6.1-sol' }, prices: { input_mtok: 3, output_mtok: 12 } }, ...p.models] } : p,
    )
    prices = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'last-modified': 'Sat, 21 Nov 2026 06:00:00 GMT' })
      res.end(JSON.stringify(data))
    })
    await new Promise<void>((r) => prices.listen(0, '127.0.0.1', r))
    upstream = await startMockUpstream(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-6.1-sol', choices: [], usage: { prompt_tokens: 1_000_000, completion_tokens: 100_000 } }),
    }))
    t = await startTestServer({ pricing: { update_url: `http://127.0.0.1:${(prices.address() as AddressInfo).port}/data.json` } }, upstream.url)
  })
  afterAll(async () => {
    await t.cleanup()
    await upstream.close()
    await new Promise((r) => prices.close(r))
  })

  it('prices later calls with the new data, keeps it in the data folder, and shows its date', async () => {
    const call = () => postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-6.1-sol', messages: [] }, { authorization: 'Bearer sk-test-update-0000000001' })
    await call()
    expect(await t.server.context.prices!.updater.update()).toBe(true)
    await call()
    await t.server.ledger.flush()
    const rows = t.server.db.prepare('SELECT cost_usd, priced FROM calls ORDER BY id').all()
    expect(rows).toEqual([
      { cost_usd: 0, priced: 0 },
      { cost_usd: 4.2, priced: 1 },
    ])
    const status = (await request(`${t.url}/api/dashboard/prices`)).json()
    expect(status).toMatchObject({ source: 'updated', updated_at: '2026-11-21T06:00:00.000Z', last_error: null })
    expect(await t.server.context.prices!.updater.cached()).toBe(true)
  })
})
