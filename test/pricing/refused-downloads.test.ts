import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Provider, waitForUpdate } from '@pydantic/genai-prices'
import { afterEach, describe, expect, it } from 'vitest'
import { postJson } from '../support/http'
import { startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import type { Logger } from '../../src/main/log'
import { recorded } from '../providers/ledger'
import { emptyUsage } from '../../src/main/metering/usage'

// Price data broken in models the old check never looked at (it priced a few per provider, and
// never tried a model's `match` rule) was applied and kept in prices.json: the calls of the broken
// models were recorded at $0 from then on, on every later start too.

/** The bundled data as a price-data server would serve it, with `change` applied to one provider's model list. */
async function bundledWith(provider: string, change: (models: any[]) => any[]): Promise<Provider[]> {
  const bundled = JSON.parse(JSON.stringify(await waitForUpdate())) as Provider[]
  return bundled.map((p) => (p.id === provider ? { ...p, models: change(p.models) } : p))
}

/** Every Anthropic model but the first with `change` applied (the first is the one the old check probed). */
const allButFirstAnthropic = (change: (m: any) => any) => bundledWith('anthropic', (models) => models.map((m, i) => (i === 0 ? m : change(m))))

/** The second Anthropic model (listed before Claude Sonnet 4.5) with `change` applied. */
const secondAnthropic = (change: (m: any) => any) =>
  bundledWith('anthropic', (models) => {
    expect(models.findIndex((m) => m.id === 'claude-sonnet-4-5')).toBeGreaterThan(1)
    return models.map((m, i) => (i === 1 ? change(m) : m))
  })

/** A model with its output price under another key, in each of its price tables. */
function renamedOutput(m: any): any {
  const rename = (t: Record<string, unknown>) => Object.fromEntries(Object.entries(t).map(([k, v]) => [k === 'output_mtok' ? 'output_tokens_mtok' : k, v]))
  return { ...m, prices: Array.isArray(m.prices) ? m.prices.map((c: any) => ({ ...c, prices: rename(c.prices) })) : rename(m.prices) }
}

/** A model with every price multiplied by `f` (tiers and dated tables too). */
function scaled(m: any, f: number): any {
  const price = (v: any): any => (typeof v === 'number' ? v * f : v && typeof v === 'object' ? { ...v, base: v.base * f, tiers: v.tiers.map((t: any) => ({ ...t, price: t.price * f })) } : v)
  const table = (t: Record<string, unknown>) => Object.fromEntries(Object.entries(t).map(([k, v]) => [k, price(v)]))
  return { ...m, prices: Array.isArray(m.prices) ? m.prices.map((c: any) => ({ ...c, prices: table(c.prices) })) : table(m.prices) }
}

const SONNET_ANSWER = {
  id: 'msg_x', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [{ type: 'text', text: 'ok' }],
  usage: { input_tokens: 100_000, output_tokens: 10_000 },
}
// 100k input at $3 + 10k output at $15 per million.
const SONNET = 0.3 + 0.15

const CEREBRAS_ANSWER = {
  id: 'c', object: 'chat.completion', model: 'gpt-oss-120b', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1_000_000, completion_tokens: 100_000, total_tokens: 1_100_000 },
}

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

/** A server whose upstream answers `answer`, and whose price data server serves `data` (if any) as newer data; `dir`: its data folder. */
async function serverWith(answer: object | ((body: any) => object), data?: Provider[], dir?: string, log?: Logger): Promise<TestServer> {
  let update_url: string | undefined
  if (data) {
    const prices = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'last-modified': 'Sat, 21 Nov 2026 06:00:00 GMT' })
      res.end(JSON.stringify(data))
    })
    await new Promise<void>((r) => prices.listen(0, '127.0.0.1', r))
    cleanups.push(() => new Promise((r) => prices.close(() => r())))
    update_url = `http://127.0.0.1:${(prices.address() as AddressInfo).port}/data.json`
  }
  const upstream = await startMockUpstream((req) => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(typeof answer === 'function' ? answer(JSON.parse(req.body.toString())) : answer),
  }))
  cleanups.push(() => upstream.close())
  const t = await startTestServer(update_url ? { pricing: { update_url } } : {}, upstream.url, dir, { log })
  cleanups.push(() => t.cleanup())
  return t
}

const sonnetCall = (t: TestServer) => () =>
  postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, {
    'x-api-key': 'sk-ant-refused-download-0000001',
  })

describe('a price download broken in models the data in use charges for is refused', () => {
  it.each([
    ['an empty price table on every Anthropic model but the first', () => allButFirstAnthropic((m) => ({ ...m, prices: {} })), /no longer charges for \d+ anthropic models \(claude-3-5-haiku-latest, .*at most 2 at once/],
    ['an empty price table on three Anthropic models', () => bundledWith('anthropic', (models) => models.map((m) => (['claude-3-haiku', 'claude-opus-4-1', 'claude-haiku-4-5'].includes(m.id) ? { ...m, prices: {} } : m))), /no longer charges for 3 anthropic models/],
    ['no `match` rule on an Anthropic model listed before Sonnet 4.5', () => secondAnthropic(({ match: _m, ...rest }) => rest), /cannot look up anthropic /],
    ['an invalid regex `match` on an Anthropic model listed before Sonnet 4.5', () => secondAnthropic((m) => ({ ...m, match: { regex: '(' } })), /cannot look up anthropic /],
    // A new model listed first whose `match` takes every Claude name: each was priced at its $0.01 / $0.05.
    ['a new Anthropic model listed first that matches every Claude model\'s name', () => bundledWith('anthropic', (models) => [{ id: 'claude-lite', match: { starts_with: 'claude-' }, prices: { input_mtok: 0.01, output_mtok: 0.05 } }, ...models]), /prices \d+ anthropic models with another model's prices \(claude-2 as claude-lite, /],
    // The library prices with the first: the checks read the second.
    ['Anthropic listed twice, its first entry with every model free', async () => {
      const data = await bundledWith('anthropic', (models) => models)
      const anthropic = data.find((p) => p.id === 'anthropic')!
      return [{ ...anthropic, models: anthropic.models.map((m) => ({ ...m, prices: {} })) }, ...data]
    }, /provider 'anthropic' is listed twice/],
    // The library ignores a price key it does not know: each model is still charged for its input.
    ['`output_mtok` renamed in every Anthropic price table', () => bundledWith('anthropic', (models) => models.map(renamedOutput)), /no longer charges for \d+ anthropic models \([\w.-]+'s output, .*at most 2 at once/],
    // Prices per token (or per thousand) under the per-million keys: every call at a millionth (a thousandth) of its cost.
    ['every Anthropic price divided by a million', () => bundledWith('anthropic', (models) => models.map((m) => scaled(m, 1e-6))), /moves the price of \d+ anthropic models 100 times or more \(claude-2 \(\$32 → \$0\.000032 per 1M input and output tokens\), /],
    ['every Anthropic price multiplied by a thousand', () => bundledWith('anthropic', (models) => models.map((m) => scaled(m, 1000))), /moves the price of \d+ anthropic models 100 times or more/],
    ['three Anthropic models priced two hundred times lower', () => bundledWith('anthropic', (models) => models.map((m) => (['claude-3-haiku', 'claude-opus-4-1', 'claude-sonnet-4-5'].includes(m.id) ? scaled(m, 0.005) : m))), /moves the price of 3 anthropic models/],
  ])('%s: Claude Sonnet 4.5 stays priced, and nothing is kept', async (_, broken, why) => {
    const t = await serverWith(SONNET_ANSWER, await broken())
    expect((await recorded(t, sonnetCall(t))).cost_usd).toBeCloseTo(SONNET, 9)
    const updater = t.server.context.prices!.updater
    expect(await updater.update()).toBe(false)
    expect(updater.status()).toMatchObject({ source: 'bundled', last_error: expect.stringMatching(why) })
    expect(await updater.cached()).toBe(false)
    const after = await recorded(t, sonnetCall(t))
    expect({ priced: after.priced, cost_usd: after.cost_usd }).toEqual({ priced: 1, cost_usd: expect.closeTo(SONNET, 9) })
  })

  it('a provider left with no models (Cerebras has 2): its calls stay priced', async () => {
    const t = await serverWith(CEREBRAS_ANSWER, await bundledWith('cerebras', () => []))
    const call = () =>
      postJson(`${t.url}/cerebras/v1/chat/completions`, { model: 'gpt-oss-120b', messages: [{ role: 'user', content: 'hi' }] }, {
        authorization: 'Bearer csk-emptied-provider-0000000001',
      })
    const before = await recorded(t, call)
    expect(before).toMatchObject({ priced: 1, cost_usd: expect.any(Number) })
    expect(before.cost_usd).toBeGreaterThan(0)
    const updater = t.server.context.prices!.updater
    expect(await updater.update()).toBe(false)
    expect(updater.status().last_error).toMatch(/refused: the new data lacks 2 of the 2 models it prices for cerebras/)
    expect(await recorded(t, call)).toMatchObject({ priced: 1, cost_usd: before.cost_usd })
  })
})

describe('a prices.json kept before downloads were checked model by model', () => {
  /** A data folder holding `providers` as the price updater kept them before the check (no `charges_checked`). */
  function folderWith(providers: Provider[]): string {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-kept-prices-'))
    const now = new Date().toISOString()
    writeFileSync(join(dir, 'prices.json'), JSON.stringify({ updated_at: now, fetched_at: now, providers }), { mode: 0o600 })
    return dir
  }

  it('is not used when it no longer charges for a model the bundled data charges for', async () => {
    const t = await serverWith(SONNET_ANSWER, undefined, folderWith(await allButFirstAnthropic((m) => ({ ...m, prices: {} }))))
    const row = await recorded(t, sonnetCall(t))
    expect({ priced: row.priced, cost_usd: row.cost_usd }).toEqual({ priced: 1, cost_usd: expect.closeTo(SONNET, 9) })
    expect(t.server.context.prices!.updater.status().source).toBe('bundled')
  })

  it('is used when it passes, and kept again marked as checked', async () => {
    const added = { id: 'gpt-6.1-sol', match: { equals: 'gpt-6.1-sol' }, prices: { input_mtok: 3, output_mtok: 12 } }
    const t = await serverWith(SONNET_ANSWER, undefined, folderWith(await bundledWith('openai', (models) => [added, ...models])))
    expect((await recorded(t, sonnetCall(t))).cost_usd).toBeCloseTo(SONNET, 9)
    const updater = t.server.context.prices!.updater
    expect(updater.status().source).toBe('cached')
    expect(JSON.parse(readFileSync(updater.file, 'utf8'))).toMatchObject({ charges_checked: true })
  })
})

describe("a download whose Azure provider lost its fallback to OpenAI's list", () => {
  it('is refused: Azure OpenAI calls of the models Azure does not list (gpt-5.4) stay priced, and nothing is kept', async () => {
    const bundled = JSON.parse(JSON.stringify(await waitForUpdate())) as Provider[]
    const data = bundled.map((p) => (p.id === 'azure' ? { ...p, fallback_model_providers: (p.fallback_model_providers ?? []).filter((f) => f !== 'openai') } : p))
    const prices = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(data))
    })
    await new Promise<void>((r) => prices.listen(0, '127.0.0.1', r))
    cleanups.push(() => new Promise((r) => prices.close(() => r())))
    const upstream = await startMockUpstream(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...CEREBRAS_ANSWER, model: 'gpt-5.4', usage: { prompt_tokens: 100_000, completion_tokens: 10_000, total_tokens: 110_000 } }),
    }))
    cleanups.push(() => upstream.close())
    const update_url = `http://127.0.0.1:${(prices.address() as AddressInfo).port}/data.json`
    const t = await startTestServer({ providers: { azure: {} }, pricing: { update_url } }, upstream.url)
    cleanups.push(() => t.cleanup())
    const call = () => postJson(`${t.url}/azure/openai/v1/chat/completions`, { model: 'gpt-5.4', messages: [{ role: 'user', content: 'hi' }] }, { 'api-key': 'azure-lost-fallback-000000001' })
    // 100k input at $2.50 + 10k output at $15 per million (Azure prices gpt-5.4 through OpenAI's list).
    expect(await recorded(t, call)).toMatchObject({ provider: 'azure', model: 'gpt-5.4', priced: 1, cost_usd: expect.closeTo(0.4, 9) })
    const updater = t.server.context.prices!.updater
    // Applied before: every such call was recorded unpriced at $0 from then on.
    expect(await updater.update()).toBe(false)
    expect(updater.status()).toMatchObject({ source: 'bundled', last_error: expect.stringMatching(/the new data no longer prices azure \S+: azure lost its fallback to openai's list/) })
    expect(await updater.cached()).toBe(false)
    expect(await recorded(t, call)).toMatchObject({ priced: 1, cost_usd: expect.closeTo(0.4, 9) })
  })
})

// Last: the data they apply stays in use for the rest of this file (each empties another model).
describe('a download that empties one model\'s price table without saying it is free', () => {
  it('is applied, the model is recorded unpriced from then on (not at a priced $0), and the log says so', async () => {
    const warnings: string[] = []
    const log: Logger = { debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error() {} }
    const data = await bundledWith('anthropic', (models) => models.map((m) => (m.id === 'claude-opus-4-1' ? { ...m, prices: {} } : m)))
    const answer = (body: any) => ({ ...SONNET_ANSWER, model: body.model })
    const t = await serverWith(answer, data, undefined, log)
    const opusCall = () =>
      postJson(`${t.url}/v1/messages`, { model: 'claude-opus-4-1', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, {
        'x-api-key': 'sk-ant-made-free-download-00000002',
      })
    expect((await recorded(t, opusCall)).cost_usd).toBeGreaterThan(0)
    const updater = t.server.context.prices!.updater
    expect(await updater.update()).toBe(true)
    expect(updater.status()).toMatchObject({ source: 'updated', last_error: null })
    expect(warnings).toEqual([expect.stringContaining('the new data has no price for anthropic claude-opus-4-1')])
    expect(await recorded(t, opusCall)).toMatchObject({ cost_usd: 0, priced: 0 })
    expect((await recorded(t, sonnetCall(t))).cost_usd).toBeCloseTo(SONNET, 9)
  })
})

describe('a download that makes one model free (a provider does: Google made Gemma free on the Gemini API)', () => {
  it('is applied, the model is recorded at $0 from then on, and the log says so', async () => {
    const warnings: string[] = []
    const log: Logger = { debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error() {} }
    // The data says so, as it does for Gemma ("free of charge"): an empty table alone does not (above).
    const data = await bundledWith('anthropic', (models) => models.map((m) => (m.id === 'claude-3-haiku' ? { ...m, prices: {}, price_comments: 'Free of charge from now on.' } : m)))
    const answer = (body: any) => ({ ...SONNET_ANSWER, model: body.model === 'claude-3-haiku' ? 'claude-3-haiku-20240307' : SONNET_ANSWER.model })
    const t = await serverWith(answer, data, undefined, log)
    const haikuCall = () =>
      postJson(`${t.url}/v1/messages`, { model: 'claude-3-haiku', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, {
        'x-api-key': 'sk-ant-made-free-download-00000001',
      })
    expect((await recorded(t, haikuCall)).cost_usd).toBeGreaterThan(0)
    const updater = t.server.context.prices!.updater
    // Refused before: every later price change (a new model, a raised price) was never applied.
    expect(await updater.update()).toBe(true)
    expect(updater.status()).toMatchObject({ source: 'updated', last_error: null })
    expect(warnings).toEqual([expect.stringContaining('the new data makes anthropic claude-3-haiku free')])
    expect(await recorded(t, haikuCall)).toMatchObject({ cost_usd: 0, priced: 1 })
    expect((await recorded(t, sonnetCall(t))).cost_usd).toBeCloseTo(SONNET, 9)
  })
})

describe('a download that moves one model\'s price a thousandfold (a correction, or a real cut)', () => {
  it('is applied, and the log says so', async () => {
    const warnings: string[] = []
    const log: Logger = { debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error() {} }
    const data = await bundledWith('anthropic', (models) => models.map((m) => (m.id === 'claude-opus-4-0' ? scaled(m, 0.001) : m)))
    const t = await serverWith(SONNET_ANSWER, data, undefined, log)
    const updater = t.server.context.prices!.updater
    expect(await updater.update()).toBe(true)
    // 1M input at $15 + 1M output at $75, then a thousandth of it.
    expect(warnings).toEqual([expect.stringContaining('the new data moves the price of anthropic claude-opus-4-0 ($90 → $0.09 per 1M input and output tokens), 100 times or more')])
    const usage = { ...emptyUsage(), input_tokens: 1_000_000, output_tokens: 1_000_000 }
    expect(t.server.context.pricer.price('anthropic', 'anthropic', 'claude-opus-4-0', usage, new Date()).cost_usd).toBeCloseTo(0.09, 12)
  })
})

describe('an ordinary download (one retired model)', () => {
  it('is applied, and kept marked as checked model by model', async () => {
    const data = await bundledWith('anthropic', (models) => models.filter((m) => m.id !== 'claude-2'))
    const t = await serverWith(SONNET_ANSWER, data)
    const updater = t.server.context.prices!.updater
    expect(await updater.update()).toBe(true)
    expect(updater.status()).toMatchObject({ source: 'updated', last_error: null })
    expect(JSON.parse(readFileSync(updater.file, 'utf8'))).toMatchObject({ charges_checked: true })
    expect((await recorded(t, sonnetCall(t))).cost_usd).toBeCloseTo(SONNET, 9)
  })
})

describe("a download whose Azure provider lists the models of a fallback it dropped", () => {
  it('is applied: nothing Azure priced is left unpriced', async () => {
    const bundled = JSON.parse(JSON.stringify(await waitForUpdate())) as Provider[]
    const xai = bundled.find((p) => p.id === 'x-ai')!
    const data = bundled.map((p) =>
      p.id === 'azure' ? { ...p, models: [...p.models, ...xai.models], fallback_model_providers: (p.fallback_model_providers ?? []).filter((f) => f !== 'x-ai') } : p,
    )
    const t = await serverWith(SONNET_ANSWER, data)
    const updater = t.server.context.prices!.updater
    expect(await updater.update()).toBe(true)
    expect(updater.status()).toMatchObject({ source: 'updated', last_error: null })
  })
})
