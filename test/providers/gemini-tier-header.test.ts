import { describe, expect, it } from 'vitest'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { libraryPrice, recorded } from './ledger'

/**
 * The Gemini API says which tier served a `generateContent` call in its answer's
 * `x-gemini-service-tier` header (Google's Priority inference docs: a priority request over its
 * limit is served at the standard tier, the header then saying `standard`); its `usageMetadata`
 * names no tier (the SDKs' UsageMetadata has none, only Vertex AI's `trafficType`). Burnrate read
 * the tier from `usageMetadata.serviceTier` alone: a call the Flex tier served was recorded at the
 * full list price (twice what Google bills), and one the Priority tier served at the standard price.
 */

const FAST = { model: 'gemini-2.5-flash', speed: 'fast', input_mtok: 0.54, output_mtok: 4.5 }
const s = serverOverMockUpstream({ pricing: { overrides: [FAST] } })

const GEMINI = '/gemini/v1beta/models/gemini-2.5-flash:generateContent'
const STREAM = '/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse'
const HEADERS = { 'x-goog-api-key': 'AIza-gemini-tier-header-00000000000001' }
const ANSWER = {
  candidates: [{ content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP' }],
  usageMetadata: { promptTokenCount: 100_000, candidatesTokenCount: 10_000, totalTokenCount: 110_000 },
  modelVersion: 'gemini-2.5-flash',
  responseId: 'resp-tier-header',
}

function served(tier: string, sse = false): void {
  const body = JSON.stringify(ANSWER)
  s.upstream.setResponder(() =>
    sse
      ? { status: 200, headers: { 'content-type': 'text/event-stream', 'x-gemini-service-tier': tier }, body: `data: ${body}\r\n\r\n` }
      : { status: 200, headers: { 'content-type': 'application/json', 'x-gemini-service-tier': tier }, body },
  )
}

const body = (serviceTier?: string) => ({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }], ...(serviceTier && { serviceTier }) })
const standard = (ts: number) => libraryPrice('google', { input_tokens: 100_000, output_tokens: 10_000 }, 'gemini-2.5-flash', ts)
const fast = (100_000 * FAST.input_mtok + 10_000 * FAST.output_mtok) / 1e6

describe("the Gemini API's x-gemini-service-tier header", () => {
  it('flex: half of every token price, JSON and streamed', async () => {
    served('flex')
    const row = await recorded(s.t, () => postJson(`${s.t.url}${GEMINI}`, body('flex'), HEADERS))
    expect(row).toMatchObject({ provider: 'gemini', input_tokens: 100_000, output_tokens: 10_000, priced: 1 })
    expect(row.cost_usd).toBe(standard(row.ts) / 2)
    expect(JSON.parse(row.usage_extra)).toMatchObject({ batch: true })
    served('flex', true)
    const streamed = await recorded(s.t, () => postJson(`${s.t.url}${STREAM}`, body('flex'), HEADERS))
    expect(streamed.cost_usd).toBe(standard(streamed.ts) / 2)
  })

  it('priority: the fast price; standard (a priority request served at the standard tier): the list price', async () => {
    served('priority')
    const row = await recorded(s.t, () => postJson(`${s.t.url}${GEMINI}`, body('priority'), HEADERS))
    expect(row.cost_usd).toBeCloseTo(fast, 15)
    expect(JSON.parse(row.usage_extra)).toMatchObject({ fast: true })
    served('standard')
    const downgraded = await recorded(s.t, () => postJson(`${s.t.url}${GEMINI}`, body('priority'), HEADERS))
    expect(downgraded.cost_usd).toBe(standard(downgraded.ts))
  })

  it('a stream cut before its usage is estimated at the tier the header named', async () => {
    const partial = JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text: 'partial answer '.repeat(40) }] } }], modelVersion: 'gemini-2.5-flash' })
    for (const [tier, mark] of [['flex', { batch: true }], ['priority', { fast: true }]] as const) {
      s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream', 'x-gemini-service-tier': tier }, body: `data: ${partial}\r\n\r\n` }))
      const row = await recorded(s.t, () => postJson(`${s.t.url}${STREAM}`, body(tier), HEADERS))
      expect(row.estimated, tier).toBe(1)
      expect(JSON.parse(row.usage_extra), tier).toMatchObject(mark)
    }
  })
})
