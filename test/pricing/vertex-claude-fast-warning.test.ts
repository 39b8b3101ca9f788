import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { silentLogger } from '../../src/main/log'
import { answer, recorded } from '../providers/ledger'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A Claude call on Vertex AI that fast mode served (the answer's `usage.speed: "fast"`), with no
 * `speed: fast` override for its model, is priced at the standard list and the log says so once:
 * in fast mode's words, as Claude's fast mode is what served it. Vertex AI's calls are priced as
 * Google's (`pricingId` google), so builds before this one said it was "served at its priority
 * tier" with "no Priority price", the wording for Gemini's priority tier (Priority PayGo), which
 * a Claude call never asks for. A Gemini call its priority tier served keeps that wording. Real
 * HTTP on 127.0.0.1, the mock upstream answering, the real SQLite ledger.
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

const HEADERS = { authorization: 'Bearer ya29.a0-burnrate-vertex-fast-warn-0001' }
const LOCATION = '/vertex/v1/projects/my-proj/locations/global/publishers'

describe('a fast call on Vertex AI priced at its standard rate', () => {
  it('a Claude call fast mode served is said to be served at fast mode, with no fast-mode price, once', async () => {
    const model = 'claude-opus-4-6'
    for (let i = 0; i < 2; i++) {
      answer(upstream, { id: `msg_vrtx_warn_${i}`, type: 'message', role: 'assistant', model, content: [{ type: 'text', text: 'Done.' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 2_000, output_tokens: 300, speed: 'fast' } })
      const row = await recorded(t, () => postJson(`${t.url}${LOCATION}/anthropic/models/${model}:rawPredict`, { anthropic_version: 'vertex-2023-10-16', speed: 'fast', max_tokens: 1000, messages: [{ role: 'user', content: 'hi' }] }, HEADERS))
      expect(row).toMatchObject({ provider: 'vertex', model, priced: 1 })
      expect(JSON.parse(row.usage_extra)).toMatchObject({ fast: true })
    }
    const said = warnings.filter((w) => w.includes(model))
    expect(said).toEqual([
      'pricing: vertex claude-opus-4-6 served at fast mode is priced at its standard rate, which is less than billed: no fast-mode price is known for it; add a pricing.overrides entry with speed: fast for it',
    ])
  })

  it("a Gemini call its priority tier served keeps the priority tier's wording", async () => {
    const model = 'gemini-2.5-flash'
    answer(upstream, { candidates: [{ content: { role: 'model', parts: [{ text: 'Done.' }] }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 2_000, candidatesTokenCount: 300, totalTokenCount: 2_300, trafficType: 'ON_DEMAND_PRIORITY' }, modelVersion: model })
    const row = await recorded(t, () => postJson(`${t.url}${LOCATION}/google/models/${model}:generateContent`, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }, HEADERS))
    expect(JSON.parse(row.usage_extra)).toMatchObject({ fast: true })
    expect(warnings.filter((w) => w.includes(model))).toEqual([
      `pricing: vertex ${model} served at its priority tier is priced at its standard rate, which is less than billed: no Priority price is known for it; add a pricing.overrides entry with speed: fast for it`,
    ])
  })
})
