import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Provider, waitForUpdate } from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { emptyUsage } from '../metering/usage'
import { loadPriceLibrary } from './library'
import { Pricer } from './price'
import { PRICES_FILE, PriceUpdater } from './update'

/** The bundled data as JSON, as a price-data server would serve it. */
const bundled: Provider[] = JSON.parse(JSON.stringify(await waitForUpdate()))

/** The published data: the bundled data with one model it lacks. */
function publishedData(): Provider[] {
  return bundled.map((p) =>
    p.id === 'openai' ? { ...p, models: [{ id: 'gpt-6.1-sol', match: { equals: 'gpt-6.1-sol' }, prices: { input_mtok: 3, output_mtok: 12 } }, ...p.models] } : p,
  ) as Provider[]
}

const usage = { ...emptyUsage(), input_tokens: 1_000_000, output_tokens: 100_000 }

describe('PriceUpdater against a local price-data server', () => {
  let server: http.Server
  let url = ''
  let body = JSON.stringify(publishedData())
  const status = 200
  let requests = 0
  const dirs: string[] = []
  const newDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'burnrate-prices-'))
    dirs.push(d)
    return d
  }

  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      requests++
      res.writeHead(status, { 'content-type': 'application/json', 'last-modified': 'Fri, 20 Nov 2026 08:00:00 GMT' })
      res.end(body)
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/data.json`
  })
  afterAll(async () => {
    await new Promise((r) => server.close(r))
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  })

  it('keeps the bundled data while offline and says why', async () => {
    const pricer = new Pricer()
    const u = new PriceUpdater({ dataDir: newDir(), url: 'http://127.0.0.1:1/data.json', autoUpdate: true, onChange: () => pricer.dataChanged() })
    expect(await u.update()).toBe(false)
    const s = u.status()
    expect(s.source).toBe('bundled')
    expect(s.last_error).toBeTruthy()
    expect(pricer.price('openai', 'openai', 'gpt-6.1-sol', usage, new Date()).priced).toBe(false)
    expect(pricer.price('openai', 'openai', 'gpt-4o-mini', usage, new Date()).priced).toBe(true)
  })

  it('refuses data the library cannot validate and keeps what it had', async () => {
    body = JSON.stringify([{ id: 'x' }])
    const dir = newDir()
    const u = new PriceUpdater({ dataDir: dir, url, autoUpdate: true, onChange: () => {} })
    expect(await u.update()).toBe(false)
    expect(u.status().last_error).toMatch(/refused/)
    expect(await u.cached()).toBe(false)
    body = JSON.stringify(publishedData())
  })

  it('refuses data that lost a provider and keeps pricing its models', async () => {
    const pricer = new Pricer()
    await pricer.ready()
    const before = pricer.price('anthropic', 'anthropic', 'claude-sonnet-4-5', usage, new Date())
    expect(before.priced).toBe(true)
    // Only some providers arrived (a partial mirror, a generator bug upstream): still a valid list.
    body = JSON.stringify(publishedData().filter((p) => p.id !== 'anthropic'))
    const dir = newDir()
    const u = new PriceUpdater({ dataDir: dir, url, autoUpdate: true, onChange: () => pricer.dataChanged() })
    expect(await u.update()).toBe(false)
    expect(u.status()).toMatchObject({ source: 'bundled', last_error: expect.stringMatching(/refused: providers missing from the new data: anthropic/) })
    expect(await u.cached()).toBe(false)
    expect(pricer.price('anthropic', 'anthropic', 'claude-sonnet-4-5', usage, new Date())).toEqual(before)
    body = JSON.stringify(publishedData())
  })

  it('refuses data whose models changed format (prices renamed) and keeps pricing them', async () => {
    const pricer = new Pricer()
    await pricer.ready()
    const before = pricer.price('openai', 'openai', 'gpt-4o', usage, new Date())
    expect(before.priced).toBe(true)
    body = JSON.stringify(publishedData().map((p) => ({ ...p, models: p.models.map(({ prices, ...m }) => ({ ...m, price: prices })) })))
    const u = new PriceUpdater({ dataDir: newDir(), url, autoUpdate: true, onChange: () => pricer.dataChanged() })
    expect(await u.update()).toBe(false)
    expect(u.status().last_error).toMatch(/refused: provider '.+' model '.+' has no usable prices/)
    expect(await u.cached()).toBe(false)
    expect(pricer.price('openai', 'openai', 'gpt-4o', usage, new Date())).toEqual(before)
    body = JSON.stringify(publishedData())
  })

  it('refuses data that no longer prices a model the data in use prices', async () => {
    // The input/output keys renamed: the library accepts the tables, but prices nothing with them.
    const rename = (t: Record<string, unknown>) => Object.fromEntries(Object.entries(t).map(([k, v]) => [k.replace('_mtok', '_per_mtok'), v]))
    body = JSON.stringify(
      publishedData().map((p) => (p.id === 'openai' ? { ...p, models: p.models.map((m) => (Array.isArray(m.prices) ? m : { ...m, prices: rename(m.prices) })) } : p)),
    )
    const u = new PriceUpdater({ dataDir: newDir(), url, autoUpdate: true, onChange: () => {} })
    expect(await u.update()).toBe(false)
    expect(u.status().last_error).toMatch(/refused: the new data does not price openai /)
    body = JSON.stringify(publishedData())
  })

  it('refuses data that lost most of a provider\'s models and keeps pricing them', async () => {
    const pricer = new Pricer()
    await pricer.ready()
    const before = pricer.price('anthropic', 'anthropic', 'claude-sonnet-4-5', usage, new Date())
    expect(before.priced).toBe(true)
    // The provider is still there, its list cut short (a generator bug upstream): claude-sonnet-4-5 among the lost.
    body = JSON.stringify(publishedData().map((p) => (p.id === 'anthropic' ? { ...p, models: p.models.slice(0, 5) } : p)))
    const u = new PriceUpdater({ dataDir: newDir(), url, autoUpdate: true, onChange: () => pricer.dataChanged() })
    expect(await u.update()).toBe(false)
    expect(u.status().last_error).toMatch(/refused: the new data lacks \d+ of the \d+ models it prices for anthropic/)
    expect(pricer.price('anthropic', 'anthropic', 'claude-sonnet-4-5', usage, new Date())).toEqual(before)
    body = JSON.stringify(publishedData())
  })

  it('refuses data with a negative price', async () => {
    body = JSON.stringify(
      publishedData().map((p) => (p.id === 'openai' ? { ...p, models: p.models.map((m) => (m.id === 'gpt-4o' ? { ...m, prices: { input_mtok: -2.5, output_mtok: 10 } } : m)) } : p)),
    )
    const u = new PriceUpdater({ dataDir: newDir(), url, autoUpdate: true, onChange: () => {} })
    expect(await u.update()).toBe(false)
    expect(u.status().last_error).toMatch(/refused: provider 'openai' model 'gpt-4o' has no usable prices/)
    body = JSON.stringify(publishedData())
  })

  it('fetches newer data, prices a model the bundled data lacks, and caches it privately', async () => {
    const pricer = new Pricer()
    expect(pricer.price('openai', 'openai', 'gpt-6.1-sol', usage, new Date()).priced).toBe(false)
    const dir = newDir()
    const u = new PriceUpdater({ dataDir: dir, url, autoUpdate: true, onChange: () => pricer.dataChanged() })
    expect(await u.update()).toBe(true)
    expect(u.status()).toMatchObject({ source: 'updated', updated_at: '2026-11-20T08:00:00.000Z', last_error: null })
    // 1M input at $3 + 100k output at $12 per million
    expect(pricer.price('openai', 'openai', 'gpt-6.1-sol', usage, new Date())).toEqual({ cost_usd: 4.2, priced: true })
    expect(statSync(join(dir, PRICES_FILE)).mode & 0o777).toBe(0o600)

    // The next start reads the cache without asking the server.
    const before = requests
    const again = new PriceUpdater({ dataDir: dir, url, autoUpdate: true, onChange: () => {}, firstDelayMs: 0 })
    expect(await again.loadCache()).toBe(true)
    expect(again.status()).toMatchObject({ source: 'cached', updated_at: '2026-11-20T08:00:00.000Z' })
    again.close()
    expect(requests).toBe(before)
  })

  it('ignores a cached copy older than the bundled data (kept from before an upgrade)', async () => {
    const bundledPrice = new Pricer()
    await bundledPrice.ready()
    const gpt5 = bundledPrice.price('openai', 'openai', 'gpt-5', usage, new Date())
    expect(gpt5).toEqual({ cost_usd: 2.25, priced: true })
    // What a Burnrate of mid-2024 fetched: every provider, but no gpt-5 yet.
    const dir = newDir()
    const old = bundled.map((p) => (p.id === 'openai' ? { ...p, models: p.models.filter((m) => !m.id.startsWith('gpt-5')) } : p))
    writeFileSync(join(dir, PRICES_FILE), JSON.stringify({ updated_at: '2024-06-01T00:00:00.000Z', fetched_at: '2024-06-01T00:00:00.000Z', providers: old }))
    const pricer = new Pricer()
    const u = new PriceUpdater({ dataDir: dir, url: 'http://127.0.0.1:1/data.json', autoUpdate: false, onChange: () => pricer.dataChanged() })
    pricer.prepareWith(() => u.prepare())
    await pricer.ready()
    expect(u.status().source).toBe('bundled')
    expect(pricer.price('openai', 'openai', 'gpt-5', usage, new Date())).toEqual(gpt5)
  })

  // What upstream publishes when a provider retires a model: the list without it. Refused, the
  // same file would be refused at every later check, and the models it adds never priced.
  it.each([
    ['anthropic', 'claude-2'],
    ['openai', 'ada'],
  ])('applies newer data that drops the retired %s model %s, and uses it from the data folder after a restart', async (providerId, modelId) => {
    expect(bundled.find((p) => p.id === providerId)!.models.some((m) => m.id === modelId)).toBe(true)
    body = JSON.stringify(publishedData().map((p) => (p.id === providerId ? { ...p, models: p.models.filter((m) => m.id !== modelId) } : p)))
    const pricer = new Pricer()
    await pricer.ready()
    const dir = newDir()
    const u = new PriceUpdater({ dataDir: dir, url, autoUpdate: true, onChange: () => pricer.dataChanged() })
    expect(await u.update()).toBe(true)
    expect(u.status()).toMatchObject({ source: 'updated', last_error: null })
    expect(pricer.price('openai', 'openai', 'gpt-6.1-sol', usage, new Date())).toEqual({ cost_usd: 4.2, priced: true })
    body = JSON.stringify(publishedData())

    // The next start: the bundled data in use again, offline. The copy kept in the data folder was
    // accepted over this same bundled data, so it is used though it lacks the retired model.
    const lib = await loadPriceLibrary()
    lib.updatePrices(({ setProviderData }) => setProviderData(bundled))
    pricer.dataChanged()
    expect(pricer.price('openai', 'openai', 'gpt-6.1-sol', usage, new Date()).priced).toBe(false)
    const again = new PriceUpdater({ dataDir: dir, url: 'http://127.0.0.1:1/data.json', autoUpdate: false, onChange: () => pricer.dataChanged() })
    expect(await again.loadCache()).toBe(true)
    expect(again.status()).toMatchObject({ source: 'cached', updated_at: '2026-11-20T08:00:00.000Z' })
    expect(pricer.price('openai', 'openai', 'gpt-6.1-sol', usage, new Date())).toEqual({ cost_usd: 4.2, priced: true })
    again.close()
  })

  it('keeps the data in use when the server answers with an older copy, and asks only for newer data', async () => {
    // First the current data, then a stale mirror's copy of mid-2024, then 304 to a conditional request.
    const seen: (string | undefined)[] = []
    const older = http.createServer((req, res) => {
      const ims = req.headers['if-modified-since']
      seen.push(ims)
      if (seen.length === 3 && ims !== undefined) {
        res.writeHead(304)
        return res.end()
      }
      const stale = seen.length > 1
      res.writeHead(200, { 'content-type': 'application/json', 'last-modified': stale ? 'Sat, 01 Jun 2024 00:00:00 GMT' : 'Fri, 20 Nov 2026 08:00:00 GMT' })
      res.end(stale ? JSON.stringify(bundled) : body)
    })
    await new Promise<void>((r) => older.listen(0, '127.0.0.1', r))
    const olderUrl = `http://127.0.0.1:${(older.address() as AddressInfo).port}/data.json`
    const pricer = new Pricer()
    const dir = newDir()
    const u = new PriceUpdater({ dataDir: dir, url: olderUrl, autoUpdate: true, onChange: () => pricer.dataChanged() })
    expect(await u.update()).toBe(true)
    expect(pricer.price('openai', 'openai', 'gpt-6.1-sol', usage, new Date())).toEqual({ cost_usd: 4.2, priced: true })
    // The next check is answered with a copy published in mid-2024, which lacks gpt-6.1-sol.
    expect(await u.update()).toBe(false)
    expect(u.status()).toMatchObject({ source: 'updated', updated_at: '2026-11-20T08:00:00.000Z', last_error: expect.stringMatching(/older than the data in use/) })
    expect(pricer.price('openai', 'openai', 'gpt-6.1-sol', usage, new Date())).toEqual({ cost_usd: 4.2, priced: true })
    expect(JSON.parse(readFileSync(join(dir, PRICES_FILE), 'utf8')).updated_at).toBe('2026-11-20T08:00:00.000Z')
    // Then the server answers the conditional request: 304, nothing changes.
    expect(await u.update()).toBe(false)
    expect(u.status()).toMatchObject({ source: 'updated', updated_at: '2026-11-20T08:00:00.000Z', last_error: null })
    expect(seen).toEqual([undefined, 'Fri, 20 Nov 2026 08:00:00 GMT', 'Fri, 20 Nov 2026 08:00:00 GMT'])
    await new Promise((r) => older.close(r))
  })

  it('retries a failed check soon with growing waits, and logs only the first failure and the recovery', async () => {
    let up = false
    const flaky = http.createServer((_req, res) => {
      res.writeHead(up ? 200 : 503, { 'content-type': 'application/json', 'last-modified': 'Fri, 20 Nov 2026 08:00:00 GMT' })
      res.end(up ? body : '')
    })
    await new Promise<void>((r) => flaky.listen(0, '127.0.0.1', r))
    const flakyUrl = `http://127.0.0.1:${(flaky.address() as AddressInfo).port}/data.json`
    // The waits the updater schedules (not how long anything took).
    const waits: number[] = []
    const real = globalThis.setTimeout
    const spy = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: () => void, ms?: number, ...a: unknown[]) => {
      // Only the updater's own (undici sets timers of its own).
      if (ms === 1234 || (ms ?? 0) >= 60_000) {
        waits.push(ms!)
        ms = waits.length < 3 ? 0 : ms // run the first two retries now
      }
      return real(fn, ms, ...a)
    }) as typeof setTimeout)
    const logged: string[] = []
    const log = { info: (m: string) => logged.push(`info ${m}`), warn: (m: string) => logged.push(`warn ${m}`) }
    const u = new PriceUpdater({ dataDir: newDir(), url: flakyUrl, autoUpdate: true, onChange: () => {}, firstDelayMs: 1234, log })
    try {
      await u.prepare()
      await expect.poll(() => waits.length).toBeGreaterThanOrEqual(3)
      expect(waits.slice(0, 3)).toEqual([1234, 60_000, 300_000])
      expect(logged.filter((m) => m.startsWith('warn'))).toHaveLength(1)
      expect(u.status().last_error).toBe('HTTP 503')
      up = true
      expect(await u.update()).toBe(true)
      expect(logged.filter((m) => m.startsWith('info') && /answers again/.test(m))).toHaveLength(1)
    } finally {
      spy.mockRestore()
      u.close()
      await new Promise((r) => flaky.close(r))
    }
  })

  it('cuts off a download without Content-Length once it passes 32 MB instead of reading it whole', async () => {
    const MB = 1024 * 1024
    let finished = false
    const huge = http.createServer(async (_req, res) => {
      // Chunked, 96 MB of spaces: three times the cap.
      res.writeHead(200, { 'content-type': 'application/json' })
      res.on('finish', () => (finished = true))
      const chunk = Buffer.alloc(MB, 0x20)
      for (let i = 0; i < 96 && !res.destroyed; i++) {
        if (!res.write(chunk)) await new Promise((r) => res.once('drain', r).once('close', r))
      }
      res.end()
    })
    await new Promise<void>((r) => huge.listen(0, '127.0.0.1', r))
    const u = new PriceUpdater({ dataDir: newDir(), url: `http://127.0.0.1:${(huge.address() as AddressInfo).port}/data.json`, autoUpdate: true, onChange: () => {} })
    expect(await u.update()).toBe(false)
    expect(u.status().last_error).toBe('the data is larger than 33554432 bytes')
    expect(finished).toBe(false) // the server never got to send it all
    huge.closeAllConnections()
    await new Promise((r) => huge.close(r))
  })

  it('with auto_update, checks on its own after the first delay', async () => {
    const before = requests
    const u = new PriceUpdater({ dataDir: newDir(), url, autoUpdate: true, onChange: () => {}, firstDelayMs: 0 })
    u.start()
    await expect.poll(() => u.status().source, { timeout: 20_000 }).toBe('updated')
    expect(requests).toBe(before + 1)
    u.close()
  })

  it('checks again once a kept copy is a day old, counted from when it was fetched, not from the start', async () => {
    // A copy fetched 8 s before this start, with checks every 10 s (a day, in the server): due 2 s after the start.
    const dir = newDir()
    const fetched = new Date(Date.now() - 8_000).toISOString()
    writeFileSync(join(dir, PRICES_FILE), JSON.stringify({ updated_at: '2026-11-19T08:00:00.000Z', fetched_at: fetched, charges_checked: true, providers: publishedData() }), { mode: 0o600 })
    const before = requests
    const u = new PriceUpdater({ dataDir: dir, url, autoUpdate: true, onChange: () => {}, firstDelayMs: 0, maxAgeMs: 10_000 })
    u.start()
    await u.prepare()
    expect(u.status().source).toBe('cached')
    // Builds before this one waited a whole interval from the start (10 s here; in the server, a copy
    // fetched 23 hours before a start was checked again 47 hours after it was fetched).
    await expect.poll(() => requests, { timeout: 6_000 }).toBe(before + 1)
    u.close()
  })

  it('with auto_update off, never asks the server', async () => {
    const before = requests
    const u = new PriceUpdater({ dataDir: newDir(), url, autoUpdate: false, onChange: () => {}, firstDelayMs: 0 })
    u.start()
    // loadCache is the only thing start() does; wait for it by loading again.
    await u.loadCache()
    await new Promise((r) => setImmediate(r))
    expect(requests).toBe(before)
    u.close()
  })
})
