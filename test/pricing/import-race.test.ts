import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Provider, waitForUpdate } from '@pydantic/genai-prices'
import { afterAll, describe, expect, it } from 'vitest'
import { emptyUsage } from '../../src/main/metering/usage'
import { loadPriceLibrary } from '../../src/main/pricing/library'
import { Pricer } from '../../src/main/pricing/price'
import { PriceUpdater } from '../../src/main/pricing/update'
import { bundledPrint, PRICES_FILE } from '../../src/main/pricing/update-cache'

// `burnrate import` (and the reports' log sync) apply the price data the server keeps in the data
// folder, and keep it again marked as checked when they change it (entries kept from the bundled
// data, ./keep-known.ts). The server may keep a newer download meanwhile: written from the copy
// as the import read it, the newer one was replaced by the older, and the server's next start
// priced with the older data.

const bundled = JSON.parse(JSON.stringify(await waitForUpdate())) as Provider[]
const NEWEST = ['claude-opus-5-5', 'claude-sonnet-5']
const withAnthropic = (change: (models: any[]) => any[]): Provider[] => bundled.map((p) => (p.id === 'anthropic' ? { ...p, models: change(p.models) } : p))
const usage = { ...emptyUsage(), input_tokens: 100_000, output_tokens: 10_000 }

const dir = mkdtempSync(join(tmpdir(), 'burnrate-import-race-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('burnrate import applying the kept price data while the server keeps a newer download', () => {
  it('leaves the newer copy in place: the next start prices with it', async () => {
    const lib = await loadPriceLibrary()
    lib.updatePrices(({ setProviderData }) => setProviderData(bundled))
    const file = join(dir, PRICES_FILE)
    // Kept by a build before entries were kept: the import keeps NEWEST's bundled prices with it, and keeps it again.
    writeFileSync(file, JSON.stringify({ updated_at: '2026-08-01T00:00:00.000Z', fetched_at: new Date().toISOString(), bundled: bundledPrint(bundled), charges_checked: true, providers: withAnthropic((models) => models.filter((m) => !NEWEST.includes(m.id))) }), { mode: 0o600 })
    // The server's download lands once the import has read the copy (its log's first line about it), before the import writes.
    const added = { id: 'claude-added-9', match: { equals: 'claude-added-9' }, prices: { input_mtok: 5, output_mtok: 25 } }
    const newer = { updated_at: '2026-08-02T00:00:00.000Z', fetched_at: new Date().toISOString(), bundled: bundledPrint(bundled), charges_checked: true, kept: [], providers: withAnthropic((models) => [added, ...models]) }
    let landed = false
    const log = {
      info() {},
      warn() {
        if (landed) return
        landed = true
        writeFileSync(`${file}.server.tmp`, JSON.stringify(newer), { mode: 0o600 })
        renameSync(`${file}.server.tmp`, file)
      },
    }
    const importer = new PriceUpdater({ dataDir: dir, autoUpdate: false, onChange: () => {}, log })
    await importer.loadCache()
    importer.close()
    expect(landed).toBe(true)
    // The older copy written over it before.
    expect(JSON.parse(readFileSync(file, 'utf8')).updated_at).toBe('2026-08-02T00:00:00.000Z')

    // The server's next start: the bundled data in use until the kept copy is applied.
    lib.updatePrices(({ setProviderData }) => setProviderData(bundled))
    const pricer = new Pricer()
    const server = new PriceUpdater({ dataDir: dir, autoUpdate: false, onChange: () => pricer.dataChanged() })
    pricer.prepareWith(() => server.prepare())
    await pricer.ready()
    expect(server.status()).toMatchObject({ source: 'cached', updated_at: '2026-08-02T00:00:00.000Z' })
    // 100k input and 10k output tokens at $5 and $25 per million.
    expect(pricer.price('anthropic', 'anthropic', 'claude-added-9', usage, new Date())).toEqual({ cost_usd: expect.closeTo(0.75, 9), priced: true })
    server.close()
  })
})
