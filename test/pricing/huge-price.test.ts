import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Provider, waitForUpdate } from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { emptyUsage } from '../../src/main/metering/usage'
import { Pricer } from '../../src/main/pricing/price'
import { PriceUpdater } from '../../src/main/pricing/update'

/**
 * Newer price data (a local price-data server) with a new model at a price so large that a call's
 * cost is no finite number. The library has no price for such a call (the call is unpriced); the
 * shortcut Burnrate prices a model's later calls with (./flat.ts, trusted after its first 16
 * agree with the library) gave Infinity for it, priced: a cost no total, budget or JSON answer can
 * hold (JSON writes it as null).
 */
describe('a price so large that a call would cost more than a number holds', () => {
  let server: http.Server
  let url = ''
  let dir = ''
  beforeAll(async () => {
    const bundled = JSON.parse(JSON.stringify(await waitForUpdate())) as Provider[]
    const data = bundled.map((p) => (p.id === 'openai' ? { ...p, models: [{ id: 'gpt-huge', match: { equals: 'gpt-huge' }, prices: { input_mtok: 1e305, output_mtok: 1 } }, ...p.models] } : p))
    server = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(data))
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/data.json`
    dir = mkdtempSync(join(tmpdir(), 'burnrate-huge-'))
  })
  afterAll(async () => {
    await new Promise((r) => server.close(r))
    rmSync(dir, { recursive: true, force: true })
  })

  it('leaves the call unpriced, as the library does, never priced at Infinity', async () => {
    const pricer = new Pricer()
    const u = new PriceUpdater({ dataDir: dir, url, autoUpdate: true, onChange: () => pricer.dataChanged() })
    expect(await u.update()).toBe(true)
    const small = { ...emptyUsage(), input_tokens: 100, output_tokens: 10 }
    for (let i = 0; i < 20; i++) expect(Number.isFinite(pricer.price('openai', 'openai', 'gpt-huge', small, new Date()).cost_usd)).toBe(true)
    const big = { ...emptyUsage(), input_tokens: 100_000, output_tokens: 10 }
    const p = pricer.price('openai', 'openai', 'gpt-huge', big, new Date())
    expect(p).toEqual({ cost_usd: 0, priced: false })
  })
})
