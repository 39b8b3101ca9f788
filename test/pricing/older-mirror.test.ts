import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Provider, waitForUpdate } from '@pydantic/genai-prices'
import { afterEach, describe, expect, it } from 'vitest'
import { postJson } from '../support/http'
import { startMockUpstream } from '../support/mock-upstream'
import { startTestServer, type TestServer } from '../support/server'
import type { Logger } from '../../src/main/log'
import { loadPriceLibrary } from '../../src/main/pricing/library'
import { bundledPrint, PRICES_FILE } from '../../src/main/pricing/update-cache'
import { recorded } from '../providers/ledger'

// pricing.update_url pointed at a mirror that is behind (or a private copy nobody refreshed): its
// data.json lacks the newest models of a provider, too few to look cut short, and the bundled data
// has no date to compare its Last-Modified with. Applied as it was, the calls of the models the
// release itself priced were recorded unpriced at $0 from then on, with nothing in the log.

/** The newest Anthropic models the bundled data prices, which the mirror's copy predates. */
const NEWEST = ['claude-opus-5-5', 'claude-sonnet-5']

const bundled = JSON.parse(JSON.stringify(await waitForUpdate())) as Provider[]
/** The bundled data without NEWEST, as a mirror behind would serve it. */
const behind = withAnthropic((models) => models.filter((m) => !NEWEST.includes(m.id)))

/** The bundled data with `change` applied to Anthropic's model list. */
function withAnthropic(change: (models: any[]) => any[]): Provider[] {
  return bundled.map((p) => (p.id === 'anthropic' ? { ...p, models: change(p.models) } : p))
}

/** What the mirror serves, and its Last-Modified. */
let served = behind
let servedAt = 'Sat, 01 Aug 2026 00:00:00 GMT'

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  served = behind
  servedAt = 'Sat, 01 Aug 2026 00:00:00 GMT'
  for (const c of cleanups.splice(0).reverse()) await c()
})

/** As a start finds the price library: the bundled data in use (an earlier test's update is set in this process's library). */
async function asAtStart(): Promise<void> {
  const lib = await loadPriceLibrary()
  lib.updatePrices(({ setProviderData }) => setProviderData(bundled))
}

/** A server whose price data server is the mirror behind, whose upstream answers 100k input and 10k output tokens, and whose log's warnings go to `warnings`; `dir`: its data folder. */
async function serverBehindMirror(warnings: string[], dir?: string): Promise<TestServer> {
  const mirror = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'last-modified': servedAt })
    res.end(JSON.stringify(served))
  })
  await new Promise<void>((r) => mirror.listen(0, '127.0.0.1', r))
  cleanups.push(() => new Promise((r) => mirror.close(() => r())))
  const upstream = await startMockUpstream((req) => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      id: 'msg_x', type: 'message', role: 'assistant', model: JSON.parse(req.body.toString()).model, content: [{ type: 'text', text: 'ok' }],
      usage: { input_tokens: 100_000, output_tokens: 10_000 },
    }),
  }))
  cleanups.push(() => upstream.close())
  const log: Logger = { debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error() {} }
  const update_url = `http://127.0.0.1:${(mirror.address() as AddressInfo).port}/data.json`
  const t = await startTestServer({ pricing: { update_url } }, upstream.url, dir, { log })
  cleanups.push(() => t.cleanup())
  return t
}

/**
 * A data folder holding a prices.json kept from the mirror behind over the bundled data `bundledAs`
 * names (its `bundled` fingerprint), with NEWEST's entries kept with it at an older release's
 * prices ($15 and $75, $3 and $15 per million); `at`: its updated_at.
 */
function keptAtOlderPrices(bundledAs: string): { dir: string; at: string } {
  const older = new Map([
    ['claude-opus-5-5', { input_mtok: 15, output_mtok: 75 }],
    ['claude-sonnet-5', { input_mtok: 3, output_mtok: 15 }],
  ])
  const keptThen = bundled.find((p) => p.id === 'anthropic')!.models.filter((m) => NEWEST.includes(m.id)).map((m) => ({ ...m, prices: older.get(m.id)! }))
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-older-mirror-'))
  const at = '2026-08-01T00:00:00.000Z'
  const copy = { updated_at: at, fetched_at: new Date().toISOString(), bundled: bundledAs, charges_checked: true, kept: NEWEST.map((m) => `anthropic ${m}`), providers: withAnthropic((models) => [...models.filter((m) => !NEWEST.includes(m.id)), ...keptThen]) }
  writeFileSync(join(dir, PRICES_FILE), JSON.stringify(copy), { mode: 0o600 })
  return { dir, at }
}

const call = (t: TestServer, model: string) => () =>
  postJson(`${t.url}/v1/messages`, { model, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, { 'x-api-key': 'sk-ant-older-mirror-0000000001' })

describe('a download from a mirror behind the bundled data (its newest models missing)', () => {
  it('keeps the prices the bundled data has for them, after a restart from the kept copy too, and says so once', async () => {
    const warnings: string[] = []
    let t = await serverBehindMirror(warnings)
    // 100k input and 10k output tokens: Claude Opus 5.5 at $4 and $20 per million, Claude Sonnet 5 at $2 and $10.
    const cost = { 'claude-opus-5-5': 0.6, 'claude-sonnet-5': 0.3 }
    for (const m of NEWEST) expect(await recorded(t, call(t, m))).toMatchObject({ model: m, priced: 1, cost_usd: expect.closeTo(cost[m as keyof typeof cost], 9) })

    const updater = t.server.context.prices!.updater
    expect(await updater.update()).toBe(true)
    expect(updater.status()).toMatchObject({ source: 'updated', updated_at: '2026-08-01T00:00:00.000Z', last_error: null })
    // Recorded unpriced at $0 before, nothing logged.
    for (const m of NEWEST) expect(await recorded(t, call(t, m))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(cost[m as keyof typeof cost], 9) })
    const said = NEWEST.map((m) => expect.stringContaining(`the new data has no entry for anthropic ${m}, which the bundled data prices: its price in use is kept`))
    expect(warnings).toEqual(said)

    // The next start: the bundled data in use again until the kept copy is applied.
    await asAtStart()
    t = await t.restart()
    cleanups.push(() => t.cleanup())
    for (const m of NEWEST) expect(await recorded(t, call(t, m))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(cost[m as keyof typeof cost], 9) })
    expect(t.server.context.prices!.updater.status()).toMatchObject({ source: 'cached', updated_at: '2026-08-01T00:00:00.000Z' })

    // The mirror still behind at the next check: applied again, the prices kept, nothing logged again.
    expect(await t.server.context.prices!.updater.update()).toBe(true)
    for (const m of NEWEST) expect(await recorded(t, call(t, m))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(cost[m as keyof typeof cost], 9) })
    expect(warnings).toEqual(said)
  })

  it('kept by a build before this one, is used with the bundled prices for them, and says so at one start only', async () => {
    await asAtStart()
    // The copy as builds before this one kept it: accepted over this same bundled data, without NEWEST.
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-older-mirror-'))
    const file = join(dir, PRICES_FILE)
    const at = '2026-08-01T00:00:00.000Z'
    writeFileSync(file, JSON.stringify({ updated_at: at, fetched_at: new Date().toISOString(), bundled: bundledPrint(bundled), charges_checked: true, providers: behind }), { mode: 0o600 })
    const warnings: string[] = []
    let t = await serverBehindMirror(warnings, dir)
    // Recorded unpriced at $0 before.
    expect(await recorded(t, call(t, 'claude-sonnet-5'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.3, 9) })
    expect(t.server.context.prices!.updater.status()).toMatchObject({ source: 'cached', updated_at: at })
    expect(warnings).toEqual(NEWEST.map((m) => expect.stringContaining(`${file} has no entry for anthropic ${m}, which the bundled data prices: its price in use is kept`)))
    expect(JSON.parse(readFileSync(file, 'utf8')).kept).toEqual(NEWEST.map((m) => `anthropic ${m}`))

    await asAtStart()
    t = await t.restart()
    cleanups.push(() => t.cleanup())
    expect(await recorded(t, call(t, 'claude-opus-5-5'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.6, 9) })
    expect(warnings).toHaveLength(2)
  })

  it('kept over an older release\'s bundled data, is not used for the prices that release kept: the new release\'s stay, after the next download too', async () => {
    await asAtStart()
    // The copy as this build kept it before an upgrade: the mirror's data, and the older release's
    // entries for NEWEST kept with it, at prices the new release's bundled data has since corrected.
    const { dir } = keptAtOlderPrices('the bundled data of an older release')
    const t = await serverBehindMirror([], dir)
    // 100k input and 10k output tokens at this release's $4 and $20 per million: at the older release's $15 and $75 ($2.25) before.
    expect(await recorded(t, call(t, 'claude-opus-5-5'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.6, 9) })
    expect(t.server.context.prices!.updater.status()).toMatchObject({ source: 'bundled' })
    // The mirror still behind: its data applied, with this release's prices kept for NEWEST (the older release's before, day after day).
    expect(await t.server.context.prices!.updater.update()).toBe(true)
    expect(await recorded(t, call(t, 'claude-opus-5-5'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.6, 9) })
    expect(await recorded(t, call(t, 'claude-sonnet-5'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.3, 9) })
  })

  it('kept over bundled data of the same models at other prices, is used with this release\'s prices for the models it kept', async () => {
    await asAtStart()
    // As kept under a release whose bundled data listed the same models at other prices (a price corrected since).
    const { dir, at } = keptAtOlderPrices(bundledPrint(bundled))
    let t = await serverBehindMirror([], dir)
    // 100k input and 10k output tokens at this release's $4 and $20 per million: at the older one's $15 and $75 ($2.25) before.
    expect(await recorded(t, call(t, 'claude-opus-5-5'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.6, 9) })
    expect(t.server.context.prices!.updater.status()).toMatchObject({ source: 'cached', updated_at: at })
    // The next start, and the next download from the mirror still behind: this release's prices still.
    await asAtStart()
    t = await t.restart()
    cleanups.push(() => t.cleanup())
    expect(await recorded(t, call(t, 'claude-sonnet-5'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.3, 9) })
    expect(await t.server.context.prices!.updater.update()).toBe(true)
    expect(await recorded(t, call(t, 'claude-opus-5-5'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.6, 9) })
  })

  it('checks the next download against the data as downloaded: the entries kept are no models it lost', async () => {
    await asAtStart()
    const warnings: string[] = []
    // Three models at once, as many as a provider may lose in one download (claude-2 and claude-v1: retired upstream).
    served = withAnthropic((models) => models.filter((m) => ![...NEWEST, 'claude-2'].includes(m.id)))
    const t = await serverBehindMirror(warnings)
    const updater = t.server.context.prices!.updater
    expect(await updater.update()).toBe(true)
    // A day later, one more retired: refused before, as losing four models at once.
    served = withAnthropic((models) => models.filter((m) => ![...NEWEST, 'claude-2', 'claude-v1'].includes(m.id)))
    servedAt = 'Sun, 02 Aug 2026 00:00:00 GMT'
    expect(await updater.update()).toBe(true)
    expect(updater.status()).toMatchObject({ source: 'updated', updated_at: '2026-08-02T00:00:00.000Z', last_error: null })
    expect(warnings).toEqual(['claude-2', ...NEWEST, 'claude-v1'].map((m) => expect.stringContaining(`the new data has no entry for anthropic ${m},`)))
    // 100k input and 10k output tokens at $8 and $24 per million.
    expect(await recorded(t, call(t, 'claude-v1'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(1.04, 9) })
  })

  it('checks a model it kept, listed again by a later download, as any model the data in use charges for', async () => {
    await asAtStart()
    const warnings: string[] = []
    const lost = [...NEWEST, 'claude-2']
    served = withAnthropic((models) => models.filter((m) => !lost.includes(m.id)))
    const t = await serverBehindMirror(warnings)
    const updater = t.server.context.prices!.updater
    expect(await updater.update()).toBe(true)
    // A day later the three listed again, at per-token prices written under the per-million keys: a millionth of their cost.
    served = withAnthropic((models) => models.map((m) => (lost.includes(m.id) ? { ...m, prices: { input_mtok: m.prices.input_mtok / 1e6, output_mtok: m.prices.output_mtok / 1e6 } } : m)))
    servedAt = 'Sun, 02 Aug 2026 00:00:00 GMT'
    // Applied before, unchecked, with nothing logged: recorded at $0.0000006.
    expect(await updater.update()).toBe(false)
    expect(updater.status()).toMatchObject({ updated_at: '2026-08-01T00:00:00.000Z', last_error: expect.stringContaining('moves the price of 3 anthropic models 100 times or more') })
    expect(await recorded(t, call(t, 'claude-opus-5-5'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.6, 9) })
  })

  it('keeps no entry for a model renamed upstream: the new entry that takes its old name prices it', async () => {
    await asAtStart()
    const warnings: string[] = []
    served = withAnthropic((models) =>
      models.map((m) => (m.id === 'claude-sonnet-5' ? { ...m, id: 'claude-sonnet-5-0', match: { or: [{ equals: 'claude-sonnet-5' }, { starts_with: 'claude-sonnet-5-0' }] }, prices: { input_mtok: 1, output_mtok: 5 } } : m)),
    )
    const t = await serverBehindMirror(warnings)
    const updater = t.server.context.prices!.updater
    expect(await updater.update()).toBe(true)
    expect(warnings).toEqual([])
    expect(JSON.parse(readFileSync(updater.file, 'utf8')).kept).toEqual([])
    // 100k input and 10k output tokens at the new entry's $1 and $5 per million.
    expect(await recorded(t, call(t, 'claude-sonnet-5'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.15, 9) })
  })
})

describe('a model a download added, which a later download does not list', () => {
  it('keeps the price it was given, after a restart from the kept copy too, and says so once', async () => {
    await asAtStart()
    const warnings: string[] = []
    // A model the bundled data does not know, added by the first download at $5 and $25 per million.
    const added = { id: 'claude-added-9', match: { equals: 'claude-added-9' }, prices: { input_mtok: 5, output_mtok: 25 } }
    served = withAnthropic((models) => [added, ...models])
    let t = await serverBehindMirror(warnings)
    const updater = t.server.context.prices!.updater
    expect(await updater.update()).toBe(true)
    // 100k input and 10k output tokens at $5 and $25 per million.
    expect(await recorded(t, call(t, 'claude-added-9'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.75, 9) })
    // A day later (a mirror gone back, a model left out upstream) the list without it: applied, every other price stays current.
    served = bundled
    servedAt = 'Sun, 02 Aug 2026 00:00:00 GMT'
    expect(await updater.update()).toBe(true)
    expect(updater.status()).toMatchObject({ source: 'updated', updated_at: '2026-08-02T00:00:00.000Z', last_error: null })
    // Recorded unpriced at $0 from then on before, with nothing in the log.
    expect(await recorded(t, call(t, 'claude-added-9'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.75, 9) })
    const said = [expect.stringContaining('the new data has no entry for anthropic claude-added-9, which the data in use prices: its price in use is kept')]
    expect(warnings).toEqual(said)
    expect(JSON.parse(readFileSync(updater.file, 'utf8')).kept).toEqual(['anthropic claude-added-9'])

    // The next start, from the kept copy, and the next download still without it: priced, nothing logged again.
    await asAtStart()
    t = await t.restart()
    cleanups.push(() => t.cleanup())
    expect(await recorded(t, call(t, 'claude-added-9'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.75, 9) })
    servedAt = 'Mon, 03 Aug 2026 00:00:00 GMT'
    expect(await t.server.context.prices!.updater.update()).toBe(true)
    expect(await recorded(t, call(t, 'claude-added-9'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.75, 9) })
    expect(warnings).toEqual(said)
  })
})

describe('a copy kept before an upgrade that renamed a model the new release\'s bundled data lists under its old id', () => {
  it('is used: the models only it prices stay priced, the renamed one at its new entry', async () => {
    await asAtStart()
    // Downloaded under an older release (another bundled fingerprint): newer than this release's
    // bundled data, it renames claude-sonnet-5 (its new entry takes the old name) and adds a model.
    const added = { id: 'claude-added-9', match: { equals: 'claude-added-9' }, prices: { input_mtok: 5, output_mtok: 25 } }
    const providers = withAnthropic((models) => [
      added,
      ...models.map((m) => (m.id === 'claude-sonnet-5' ? { ...m, id: 'claude-sonnet-5-0', match: { or: [{ equals: 'claude-sonnet-5' }, { starts_with: 'claude-sonnet-5-0' }] }, prices: { input_mtok: 1, output_mtok: 5 } } : m)),
    ])
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-older-mirror-'))
    const at = '2026-08-01T00:00:00.000Z'
    writeFileSync(join(dir, PRICES_FILE), JSON.stringify({ updated_at: at, fetched_at: new Date().toISOString(), bundled: 'the bundled data of an older release', charges_checked: true, kept: [], providers }), { mode: 0o600 })
    const t = await serverBehindMirror([], dir)
    // Set aside before (it lacks the id claude-sonnet-5): recorded unpriced at $0 until a download, for good with auto_update off.
    expect(await recorded(t, call(t, 'claude-added-9'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.75, 9) })
    expect(t.server.context.prices!.updater.status()).toMatchObject({ source: 'cached', updated_at: at })
    // 100k input and 10k output tokens at the new entry's $1 and $5 per million.
    expect(await recorded(t, call(t, 'claude-sonnet-5'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.15, 9) })
  })
})

describe('a copy kept before an upgrade with the price of a model a download added that a later one lacked', () => {
  it('keeps that price after the upgrade', async () => {
    await asAtStart()
    const added = { id: 'claude-added-9', match: { equals: 'claude-added-9' }, prices: { input_mtok: 5, output_mtok: 25 } }
    // As this build keeps it under an older release: the mirror's data (up to date on NEWEST), and claude-added-9 kept from an earlier download.
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-older-mirror-'))
    const at = '2026-08-01T00:00:00.000Z'
    const kept = ['anthropic claude-added-9']
    const copy = { updated_at: at, fetched_at: new Date().toISOString(), bundled: 'the bundled data of an older release', charges_checked: true, kept, kept_added: kept, kept_over: 'an older release', providers: withAnthropic((models) => [...models, added]) }
    writeFileSync(join(dir, PRICES_FILE), JSON.stringify(copy), { mode: 0o600 })
    served = bundled
    let t = await serverBehindMirror([], dir)
    // Put aside as an older release's bundled price before: recorded unpriced at $0 from then on.
    expect(await recorded(t, call(t, 'claude-added-9'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.75, 9) })
    expect(t.server.context.prices!.updater.status()).toMatchObject({ source: 'cached', updated_at: at })
    // The next start, and the next download from the mirror (without it): still priced.
    await asAtStart()
    t = await t.restart()
    cleanups.push(() => t.cleanup())
    expect(await recorded(t, call(t, 'claude-added-9'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.75, 9) })
    servedAt = 'Sun, 02 Aug 2026 00:00:00 GMT'
    expect(await t.server.context.prices!.updater.update()).toBe(true)
    expect(await recorded(t, call(t, 'claude-added-9'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.75, 9) })
  })
})

describe('a model a download renamed (its new entry taking the old name), which a later download lists under neither name', () => {
  it('keeps the price in use, the new entry\'s, not the bundled one under the old name', async () => {
    await asAtStart()
    const warnings: string[] = []
    // The first download renames claude-sonnet-5 (its new entry at $1 and $5 per million takes the old name).
    served = withAnthropic((models) =>
      models.map((m) => (m.id === 'claude-sonnet-5' ? { ...m, id: 'claude-sonnet-5-0', match: { or: [{ equals: 'claude-sonnet-5' }, { starts_with: 'claude-sonnet-5-0' }] }, prices: { input_mtok: 1, output_mtok: 5 } } : m)),
    )
    let t = await serverBehindMirror(warnings)
    const updater = t.server.context.prices!.updater
    expect(await updater.update()).toBe(true)
    // 100k input and 10k output tokens at the new entry's $1 and $5 per million.
    expect(await recorded(t, call(t, 'claude-sonnet-5'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.15, 9) })
    // A day later the mirror gone back behind the bundled data: neither name listed.
    served = behind
    servedAt = 'Sun, 02 Aug 2026 00:00:00 GMT'
    expect(await updater.update()).toBe(true)
    // The bundled entry's $2 and $10 per million ($0.30) came back before: the price in use, $0.15, is kept.
    expect(await recorded(t, call(t, 'claude-sonnet-5'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.15, 9) })
    expect(await recorded(t, call(t, 'claude-opus-5-5'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.6, 9) })
    expect(warnings).toEqual(['claude-opus-5-5', 'claude-sonnet-5-0'].map((m) => expect.stringContaining(`the new data has no entry for anthropic ${m},`)))
    // The next start, from the kept copy: the same.
    await asAtStart()
    t = await t.restart()
    cleanups.push(() => t.cleanup())
    expect(await recorded(t, call(t, 'claude-sonnet-5'))).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.15, 9) })
  })
})
