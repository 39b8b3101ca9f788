import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { silentLogger } from '../../src/main/log'
import { answer, libraryPrice, recorded } from '../providers/ledger'

/**
 * A Gemini API call its Priority tier served (the answer's `usageMetadata.serviceTier` is
 * `priority`) is billed above the Standard list: Google's pricing page (ai.google.dev/gemini-api/
 * docs/pricing), as the price data's comment for Gemini 3.7 Flash and 3.8 Flash quotes it:
 * "Priority tier is 1.8x". Through a running Burnrate (real HTTP on 127.0.0.1, the mock upstream
 * as Google, the real SQLite ledger). A model or a Vertex AI call (Priority PayGo, `trafficType`
 * `ON_DEMAND_PRIORITY`) with no published Priority price is priced at its standard rate, and the
 * log says so once per model, as for OpenAI's.
 */

let upstream: MockUpstream
let t: TestServer
const warnings: string[] = []

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer({}, upstream.url, undefined, { log: { ...silentLogger, warn: (m) => warnings.push(m) } })
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

const BODY = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }
const GEMINI = { 'x-goog-api-key': 'AIza-gemini-priority-00000000000000001' }
const VERTEX = { authorization: 'Bearer ya29.a0-burnrate-gemini-priority-0001' }
const geminiPath = (model: string) => `/gemini/v1beta/models/${model}:generateContent`
const vertexPath = (model: string) => `/vertex/v1/projects/my-proj/locations/global/publishers/google/models/${model}:generateContent`

/** 100,000 prompt tokens (20,000 of them cached), 10,000 output tokens, served by `tier`. */
function answerWith(model: string, tier: Record<string, string>): void {
  answer(upstream, {
    candidates: [{ content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP' }],
    usageMetadata: { promptTokenCount: 100_000, cachedContentTokenCount: 20_000, candidatesTokenCount: 10_000, totalTokenCount: 110_000, ...tier },
    modelVersion: model,
  })
}

/**
 * Gemini 3.8 Flash's Standard list, per 1M tokens (the price data, from Google's page): $0.75
 * input, $0.075 cached input, $3.75 output through December 31, 2026 (introductory), then $1.50 /
 * $0.15 / $7.50.
 */
function standardByHand(ts: number): number {
  const intro = ts < Date.UTC(2027, 0, 1)
  const [input, cached, output] = intro ? [0.75, 0.075, 3.75] : [1.5, 0.15, 7.5]
  return (80_000 * input + 20_000 * cached + 10_000 * output) / 1e6
}

describe('Gemini priority tier', () => {
  it('a Gemini API call served at priority is recorded at 1.8x every token price (Gemini 3.8 Flash)', async () => {
    answerWith('gemini-3.8-flash', { serviceTier: 'priority' })
    const row = await recorded(t, () => postJson(`${t.url}${geminiPath('gemini-3.8-flash')}`, { ...BODY, serviceTier: 'priority' }, GEMINI))
    expect(row).toMatchObject({ provider: 'gemini', input_tokens: 100_000, cache_read_tokens: 20_000, output_tokens: 10_000, priced: 1 })
    expect(JSON.parse(row.usage_extra)).toMatchObject({ fast: true })
    // Intro prices: (80,000 x $1.35 + 20,000 x $0.135 + 10,000 x $6.75) / 1M = $0.1782.
    expect(row.cost_usd).toBeCloseTo(standardByHand(row.ts) * 1.8, 15)
    expect(warnings.filter((w) => w.includes('gemini-3.8-flash'))).toEqual([])
  })

  it('the same call served at standard is recorded at the list', async () => {
    answerWith('gemini-3.8-flash', { serviceTier: 'standard' })
    const row = await recorded(t, () => postJson(`${t.url}${geminiPath('gemini-3.8-flash')}`, BODY, GEMINI))
    expect(row.cost_usd).toBeCloseTo(standardByHand(row.ts), 15)
  })

  it('a model with no published Priority price is recorded at its standard price, and the log says so once', async () => {
    const model = 'gemini-2.5-flash'
    for (let i = 0; i < 2; i++) {
      answerWith(model, { serviceTier: 'priority' })
      const row = await recorded(t, () => postJson(`${t.url}${geminiPath(model)}`, BODY, GEMINI))
      expect(JSON.parse(row.usage_extra)).toMatchObject({ fast: true })
      expect(row.cost_usd).toBe(libraryPrice('google', { input_tokens: 100_000, cache_read_tokens: 20_000, output_tokens: 10_000 }, model, row.ts))
    }
    const said = warnings.filter((w) => w.includes(model))
    expect(said).toHaveLength(1)
    expect(said[0]).toContain('less than billed')
  })

  it('a Vertex AI call served at Priority PayGo (ON_DEMAND_PRIORITY), whose prices Google publishes apart, is recorded at the standard list, and the log says so once', async () => {
    const model = 'gemini-3.8-flash'
    for (let i = 0; i < 2; i++) {
      answerWith(model, { trafficType: 'ON_DEMAND_PRIORITY' })
      const row = await recorded(t, () => postJson(`${t.url}${vertexPath(model)}`, BODY, VERTEX))
      expect(row).toMatchObject({ provider: 'vertex' })
      expect(JSON.parse(row.usage_extra)).toMatchObject({ fast: true })
      expect(row.cost_usd).toBeCloseTo(standardByHand(row.ts), 15)
    }
    const said = warnings.filter((w) => w.includes('vertex') && w.includes(model))
    expect(said).toHaveLength(1)
    expect(said[0]).toContain('less than billed')
  })

  it('a block rule reserves a Gemini request that asks for priority at the priority price: refused before it goes upstream where standard passes', async () => {
    // Worst case of 10,000 output tokens (and a prompt of a few dozen): $0.0375 at Gemini 3.8
    // Flash's $3.75 (intro; $0.075 after 2026), 1.8x that at priority: the limit is 1.4x.
    const output = Date.now() < Date.UTC(2027, 0, 1) ? 3.75 : 7.5
    const limit = ((10_000 * output) / 1e6) * 1.4
    const t2 = await startTestServer(
      { budgets: { rules: [{ api_key_pattern: 'AIza-gemini-priority-budget-*', daily_limit_usd: limit, action: 'block', reserve: 'max_tokens' }] } },
      upstream.url,
    )
    try {
      const key = { 'x-goog-api-key': 'AIza-gemini-priority-budget-000000001' }
      const body = { ...BODY, generationConfig: { maxOutputTokens: 10_000 } }
      answer(upstream, {
        candidates: [{ content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP' }],
        usageMetadata: { promptTokenCount: 4, candidatesTokenCount: 1, totalTokenCount: 5, serviceTier: 'standard' },
        modelVersion: 'gemini-3.8-flash',
      })
      const before = upstream.requests.length
      expect((await postJson(`${t2.url}${geminiPath('gemini-3.8-flash')}`, body, key)).status).toBe(200)
      const refused = await postJson(`${t2.url}${geminiPath('gemini-3.8-flash')}`, { ...body, serviceTier: 'priority' }, key)
      expect(refused.status).toBe(429)
      expect(refused.json().error.type).toBe('budget_exceeded')
      expect(upstream.requests.length).toBe(before + 1)
    } finally {
      await t2.cleanup()
    }
  })
})
