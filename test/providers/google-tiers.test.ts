import { describe, expect, it } from 'vitest'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, libraryPrice, recorded } from './ledger'

/**
 * The tier that served a Gemini call, as the answer says it, through a running Burnrate: the
 * Gemini API's `usageMetadata.serviceTier` and Vertex AI's `usageMetadata.trafficType`
 * (`ON_DEMAND`, `ON_DEMAND_FLEX`, `ON_DEMAND_PRIORITY`, `PROVISIONED_THROUGHPUT`). Flex (Vertex
 * AI's Flex PayGo) is half of every token price; priority costs more, by model, and is priced by
 * a `pricing.overrides` entry with `speed: fast` (the price data has no priority rates).
 */

// Made-up fast prices for the test: what a user would copy from Google's pricing page.
const FAST = { model: 'gemini-2.5-flash', speed: 'fast', input_mtok: 0.54, output_mtok: 4.5 }
const s = serverOverMockUpstream({ pricing: { overrides: [FAST] } })

const VERTEX = '/vertex/v1/projects/my-proj/locations/global/publishers/google/models/gemini-2.5-flash:generateContent'
const GEMINI = '/gemini/v1beta/models/gemini-2.5-flash:generateContent'
const BODY = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }
const VERTEX_HEADERS = { authorization: 'Bearer ya29.a0-burnrate-google-tiers-0001' }
const GEMINI_HEADERS = { 'x-goog-api-key': 'AIza-google-tiers-000000000000000001' }

function answerWith(tier: Record<string, string>): void {
  answer(s.upstream, {
    candidates: [{ content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP' }],
    usageMetadata: { promptTokenCount: 100_000, candidatesTokenCount: 10_000, totalTokenCount: 110_000, ...tier },
    modelVersion: 'gemini-2.5-flash',
  })
}

const standard = (ts: number) => libraryPrice('google', { input_tokens: 100_000, output_tokens: 10_000 }, 'gemini-2.5-flash', ts)
const fast = (100_000 * FAST.input_mtok + 10_000 * FAST.output_mtok) / 1e6

describe('Google service tiers', () => {
  it('Vertex AI Flex PayGo (trafficType ON_DEMAND_FLEX): half of every token price', async () => {
    answerWith({ trafficType: 'ON_DEMAND_FLEX' })
    const row = await recorded(s.t, () => postJson(`${s.t.url}${VERTEX}`, BODY, { ...VERTEX_HEADERS, 'x-vertex-ai-llm-shared-request-type': 'flex' }))
    expect(row).toMatchObject({ provider: 'vertex', input_tokens: 100_000, output_tokens: 10_000, priced: 1 })
    expect(row.cost_usd).toBe(standard(row.ts) / 2)
  })

  it('Vertex AI priority (trafficType ON_DEMAND_PRIORITY) and the Gemini API priority tier (serviceTier priority): the fast override', async () => {
    answerWith({ trafficType: 'ON_DEMAND_PRIORITY' })
    const vertex = await recorded(s.t, () => postJson(`${s.t.url}${VERTEX}`, BODY, VERTEX_HEADERS))
    expect(vertex.cost_usd).toBeCloseTo(fast, 15)
    expect(JSON.parse(vertex.usage_extra)).toMatchObject({ fast: true })
    answerWith({ serviceTier: 'priority' })
    const gemini = await recorded(s.t, () => postJson(`${s.t.url}${GEMINI}`, BODY, GEMINI_HEADERS))
    expect(gemini.cost_usd).toBeCloseTo(fast, 15)
    expect(fast).toBeGreaterThan(standard(gemini.ts) * 1.5)
  })

  it('standard pay-as-you-go (trafficType ON_DEMAND, serviceTier standard): the list price', async () => {
    answerWith({ trafficType: 'ON_DEMAND' })
    const vertex = await recorded(s.t, () => postJson(`${s.t.url}${VERTEX}`, BODY, VERTEX_HEADERS))
    expect(vertex.cost_usd).toBe(standard(vertex.ts))
    answerWith({ serviceTier: 'standard' })
    const gemini = await recorded(s.t, () => postJson(`${s.t.url}${GEMINI}`, BODY, GEMINI_HEADERS))
    expect(gemini.cost_usd).toBe(standard(gemini.ts))
  })
})
