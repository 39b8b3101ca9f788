import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Provider, waitForUpdate } from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { emptyUsage } from '../../src/main/metering/usage'
import { Pricer } from '../../src/main/pricing/price'
import { PriceUpdater } from '../../src/main/pricing/update'

/** The bundled data with one model it lacks, as a price-data server would serve it. */
const bundled: Provider[] = JSON.parse(JSON.stringify(await waitForUpdate()))
const withModel = (id: string): Provider[] =>
  bundled.map((p) => (p.id === 'openai' ? { ...p, models: [{ id, match: { equals: id }, prices: { input_mtok: 3, output_mtok: 12 } }, ...p.models] } : p)) as Provider[]

const usage = { ...emptyUsage(), input_tokens: 1_000_000, output_tokens: 100_000 }

/** What the price-data server does with the next request. */
let serve: (res: http.ServerResponse) => void = () => {}

describe('the price-data server', () => {
  let server: http.Server
  let url = ''
  const dirs: string[] = []
  const newDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'burnrate-prices-'))
    dirs.push(d)
    return d
  }
  beforeAll(async () => {
    server = http.createServer((_req, res) => serve(res))
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/data.json`
  })
  afterAll(async () => {
    server.closeAllConnections()
    await new Promise((r) => server.close(r))
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  })

  it('sending its answer a byte at a time is cut off at the time limit (undici restarts its own timeouts at each byte), and the data in use stays', async () => {
    let cut = false
    serve = (res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      // A byte every 50 ms, for as long as the client listens: never a 1-second pause.
      const timer = setInterval(() => res.write(' '), 50)
      res.on('close', () => {
        clearInterval(timer)
        cut = true
      })
    }
    const pricer = new Pricer()
    await pricer.ready()
    const u = new PriceUpdater({ dataDir: newDir(), url, autoUpdate: true, timeoutMs: 1_000, onChange: () => pricer.dataChanged() })
    // Before, this never resolved: the fetch held on, and so did every later check (each waits for the one before).
    expect(await u.update()).toBe(false)
    expect(u.status()).toMatchObject({ source: 'bundled', last_error: 'the download took longer than 1000 ms' })
    await expect.poll(() => cut).toBe(true)
    expect(await u.cached()).toBe(false)
    expect(pricer.price('openai', 'openai', 'gpt-4o-mini', usage, new Date()).priced).toBe(true)
  }, 30_000)

  it('dating its data ahead of the clock does not make every later update look older', async () => {
    let lastModified = 'Fri, 01 Jan 2100 00:00:00 GMT'
    let data = withModel('gpt-6.1-sol')
    serve = (res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'last-modified': lastModified })
      res.end(JSON.stringify(data))
    }
    const pricer = new Pricer()
    const dir = newDir()
    const u = new PriceUpdater({ dataDir: dir, url, autoUpdate: true, onChange: () => pricer.dataChanged() })
    await u.prepare()
    expect(await u.update()).toBe(true)
    const first = u.status()
    const kept = JSON.parse(readFileSync(u.file, 'utf8')).updated_at
    // The next publication, dated truly: before, refused as "older than the data in use (of 2100-01-01…)", for good
    // (the date was kept in prices.json, so across restarts too).
    lastModified = new Date(Date.parse(first.checked_at!) + 1000).toUTCString()
    data = withModel('gpt-6.2-sol')
    expect(await u.update()).toBe(true)
    expect(u.status()).toMatchObject({ source: 'updated', last_error: null })
    expect(pricer.price('openai', 'openai', 'gpt-6.2-sol', usage, new Date())).toEqual({ cost_usd: 4.2, priced: true })
    // The first data was dated when it was checked, not in 2100.
    expect(first.updated_at).toBe(first.checked_at)
    expect(kept).toBe(first.checked_at)
    // A copy an earlier release kept dated 2100 is used at start, and does not hold off the next update either.
    writeFileSync(u.file, JSON.stringify({ ...JSON.parse(readFileSync(u.file, 'utf8')), updated_at: '2100-01-01T00:00:00.000Z' }))
    const next = new PriceUpdater({ dataDir: dir, url, autoUpdate: false, onChange: () => pricer.dataChanged() })
    await next.prepare()
    expect(next.status()).toMatchObject({ source: 'cached', updated_at: '2100-01-01T00:00:00.000Z' })
    lastModified = new Date().toUTCString()
    data = withModel('gpt-6.3-sol')
    expect(await next.update()).toBe(true)
    expect(pricer.price('openai', 'openai', 'gpt-6.3-sol', usage, new Date())).toEqual({ cost_usd: 4.2, priced: true })
  })
})
