import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Provider, waitForUpdate } from '@pydantic/genai-prices'
import { afterAll, describe, expect, it } from 'vitest'
import { PRICES_FILE, PriceUpdater } from './update'

const bundled: Provider[] = JSON.parse(JSON.stringify(await waitForUpdate()))
const published = bundled.map((p) =>
  p.id === 'openai' ? { ...p, models: [{ id: 'gpt-304-sol', match: { equals: 'gpt-304-sol' }, prices: { input_mtok: 3, output_mtok: 12 } }, ...p.models] } : p,
) as Provider[]

/**
 * A check answered 304 (nothing newer) left prices.json's fetched_at as it was: after a restart the
 * copy looked a day old and was checked again 10 s after start, an extra request each restart. A
 * 304 now keeps the copy with the check's time as fetched_at, so the next start counts from it.
 */
describe('a check answered 304', () => {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-prices-304-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('keeps the copy as fetched now: the next start takes it as fresh', async () => {
    const seen: (string | undefined)[] = []
    const server = http.createServer((req, res) => {
      seen.push(req.headers['if-modified-since'])
      res.writeHead(304)
      res.end()
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/data.json`
    const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000).toISOString()
    const kept = { updated_at: '2026-11-19T08:00:00.000Z', fetched_at: twoDaysAgo, charges_checked: true, providers: published }
    writeFileSync(join(dir, PRICES_FILE), JSON.stringify(kept), { mode: 0o600 })

    const u = new PriceUpdater({ dataDir: dir, url, autoUpdate: false, onChange: () => {} })
    expect(await u.loadCache()).toBe(false) // stale: due for a check
    const checkedFrom = Date.now()
    expect(await u.update()).toBe(false)
    expect(seen).toEqual(['Thu, 19 Nov 2026 08:00:00 GMT'])
    expect(u.status()).toMatchObject({ source: 'cached', updated_at: '2026-11-19T08:00:00.000Z', last_error: null })
    const after = JSON.parse(readFileSync(join(dir, PRICES_FILE), 'utf8'))
    expect(Date.parse(after.fetched_at)).toBeGreaterThanOrEqual(checkedFrom - 1000)
    expect({ ...after, fetched_at: twoDaysAgo }).toEqual(kept)
    u.close()

    // The next start: the copy is fresh, no check is due before a day from the 304.
    const again = new PriceUpdater({ dataDir: dir, url, autoUpdate: false, onChange: () => {} })
    expect(await again.loadCache()).toBe(true)
    again.close()
    await new Promise((r) => server.close(r))
  })
})
