import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A `block` rule's reservation for a Gemini request with the Google Search tool agrees with what
 * the call is recorded at under `pricing.google_search_grounding`: `free` reserves no grounding
 * (it is recorded at $0), `paid` reserves one grounded prompt on Gemini 2.5 ($0.035, the most it
 * is billed) and one search query on Gemini 3 ($0.014). The limit, $0.01, is far above the tokens'
 * worst case (a small body, `maxOutputTokens: 100`: well under $0.001) and below either fee, so a
 * reservation that counts the fee is refused before the call goes upstream.
 */

const LIMIT = 0.01
const RULES = { rules: [{ api_key_pattern: '*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' }] }
const PROMPT = { contents: [{ role: 'user', parts: [{ text: 'What is the weather in San Francisco today?' }] }], generationConfig: { maxOutputTokens: 100 } }
const SEARCH = { ...PROMPT, tools: [{ googleSearch: {} }] }
const VERTEX = '/vertex/v1/projects/my-proj/locations/global/publishers/google/models/gemini-3-flash-preview:generateContent'

let upstream: MockUpstream
let free: TestServer
let paid: TestServer
beforeAll(async () => {
  upstream = await startMockUpstream()
  // Whatever is asked, a small answer without grounding: only admission is under test here.
  const body = fixture('gemini/generate-content-cached-thoughts.json')
  upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body }))
  free = await startTestServer({ budgets: RULES }, upstream.url)
  paid = await startTestServer({ budgets: RULES, pricing: { google_search_grounding: 'paid' } }, upstream.url)
})
afterAll(async () => {
  await free?.cleanup()
  await paid?.cleanup()
  await upstream?.close()
})

const gemini = (t: TestServer, body: object, key: string) => postJson(`${t.url}/gemini/v1beta/models/gemini-2.5-flash:generateContent`, body, { 'x-goog-api-key': key })
const vertex = (t: TestServer, body: object, token: string) => postJson(`${t.url}${VERTEX}`, body, { authorization: `Bearer ${token}` })

describe('reservations for Grounding with Google Search', () => {
  it('free: a request with the tool reserves no grounding fee, on Gemini 2.5 and Gemini 3', async () => {
    expect((await gemini(free, SEARCH, 'AIzaSy-grounding-free-000000001')).status).toBe(200)
    expect((await vertex(free, SEARCH, 'ya29.grounding-free-000000001')).status).toBe(200)
  })

  it('paid: Gemini 2.5 reserves its grounded prompt and Gemini 3 one query, so both are refused under a $0.01 limit', async () => {
    const refused = await gemini(paid, SEARCH, 'AIzaSy-grounding-paid-000000001')
    expect(refused.status).toBe(429)
    expect((await vertex(paid, SEARCH, 'ya29.grounding-paid-000000001')).status).toBe(429)
    expect(upstream.requests.filter((r) => r.headers['x-goog-api-key'] === 'AIzaSy-grounding-paid-000000001')).toHaveLength(0)
  })

  it('paid: the same requests without the tool reserve no fee and pass', async () => {
    expect((await gemini(paid, PROMPT, 'AIzaSy-grounding-paid-000000002')).status).toBe(200)
    expect((await vertex(paid, PROMPT, 'ya29.grounding-paid-000000002')).status).toBe(200)
  })
})
