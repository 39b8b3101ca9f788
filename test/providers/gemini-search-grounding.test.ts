import Database from 'better-sqlite3'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { answer, libraryPrice, recorded } from './ledger'

/**
 * Grounding with Google Search on Gemini, through a running Burnrate (real HTTP on 127.0.0.1, a
 * mock upstream replaying recorded answers, the real SQLite ledger). Google bills Gemini 3 per
 * distinct search query ($14 per 1,000) and Gemini 2.5 per grounded prompt ($35 per 1,000), each
 * past a free allowance per project that Burnrate cannot see (src/main/pricing/search-grounding.ts).
 * `pricing.google_search_grounding: free` (the default) records the counts at $0 and says so once
 * per model in the log; `paid` prices them at list, and budgets reserve them. Answers:
 * - gemini/generate-content-google-search.json: gemini-2.5-flash, two queries (recorded);
 * - gemini/stream-generate-content-google-search.sse: gemini-2.5-pro, ten events, `groundingMetadata: {}`
 *   on the first nine, one query on the last (recorded);
 * - gemini/vertex-generate-content-google-search-gemini-3.json: gemini-3-flash-preview on Vertex AI, one query (recorded);
 * - gemini/vertex-stream-generate-content-google-search-gemini-3-derived.sse: that answer cut into two
 *   events that both carry the first query, the last also an empty one and a second query (derived: SOURCES.md).
 */

const KEY = 'AIzaSy-test-grounding-key-0000001'
const VERTEX = { authorization: 'Bearer ya29.a0-burnrate-grounding-test-0001' }
const GEMINI_VERTEX = '/v1/projects/my-proj/locations/global/publishers/google/models'
const SEARCH_BODY = { contents: [{ role: 'user', parts: [{ text: 'What is the weather in San Francisco today?' }] }], tools: [{ googleSearch: {} }] }

let upstream: MockUpstream
let free: TestServer
let paid: TestServer
const freeLog: string[] = []
beforeAll(async () => {
  upstream = await startMockUpstream()
  const log = { debug() {}, info() {}, warn: (m: string) => freeLog.push(m), error() {} }
  free = await startTestServer({ ...ADMIN_CONFIG }, upstream.url, undefined, { log })
  paid = await startTestServer({ ...ADMIN_CONFIG, pricing: { google_search_grounding: 'paid' } }, upstream.url)
})
afterAll(async () => {
  await free?.cleanup()
  await paid?.cleanup()
  await upstream?.close()
})
beforeEach(() => {
  upstream.requests.length = 0
})

const tokens = (row: any, model: string) =>
  libraryPrice('google', { input_tokens: row.input_tokens, cache_read_tokens: row.cache_read_tokens, output_tokens: row.output_tokens }, model, row.ts)

async function costAfterReprice(t: TestServer, provider: string, model: string, id: number): Promise<number> {
  const r = await admin(t.url, 'POST', `/prices/${provider}/${model}/reprice?all=true`)
  expect(r.status).toBe(200)
  const db = new Database(t.dbFile, { readonly: true })
  try {
    return (db.prepare('SELECT cost_usd FROM calls WHERE id = ?').get(id) as { cost_usd: number }).cost_usd
  } finally {
    db.close()
  }
}

describe('Gemini API, Gemini 2.5: billed per grounded prompt', () => {
  const ask = (t: TestServer) => recorded(t, () => postJson(`${t.url}/gemini/v1beta/models/gemini-2.5-flash:generateContent`, SEARCH_BODY, { 'x-goog-api-key': KEY }))

  it('free (the default): the two queries and the grounded prompt are recorded, priced at $0, and the log says why once per model', async () => {
    answer(upstream, fixture('gemini/generate-content-google-search.json'))
    const row = await ask(free)
    expect(row).toMatchObject({ provider: 'gemini', model: 'gemini-2.5-flash', input_tokens: 11 + 90, output_tokens: 105 + 131, priced: 1, estimated: 0 })
    expect(JSON.parse(row.usage_extra)).toEqual({ google_search_queries: 2, google_search_grounded: true })
    expect(row.cost_usd).toBe(tokens(row, 'gemini-2.5-flash'))
    const said = freeLog.filter((l) => l.includes('Grounding with Google Search') && l.includes('gemini-2.5-flash'))
    expect(said).toHaveLength(1)
    expect(said[0]).toContain('a grounded prompt')
    expect(said[0]).toContain('pricing.google_search_grounding: paid')

    answer(upstream, fixture('gemini/generate-content-google-search.json'))
    await ask(free)
    expect(freeLog.filter((l) => l.includes('Grounding with Google Search') && l.includes('gemini-2.5-flash'))).toHaveLength(1)
  })

  it('paid: one grounded prompt at $35 per 1,000, however many queries it ran; re-pricing charges the same', async () => {
    answer(upstream, fixture('gemini/generate-content-google-search.json'))
    const row = await ask(paid)
    expect(JSON.parse(row.usage_extra)).toEqual({ google_search_queries: 2, google_search_grounded: true })
    expect(row.cost_usd).toBe(tokens(row, 'gemini-2.5-flash') + 35 / 1000)
    expect(await costAfterReprice(paid, 'gemini', 'gemini-2.5-flash', row.id)).toBe(row.cost_usd)
  })

  it('streamed: the empty metadata of every chunk and the query of the last count once', async () => {
    for (const [t, fee] of [[free, 0], [paid, 35 / 1000]] as const) {
      answer(upstream, fixture('gemini/stream-generate-content-google-search.sse'), 'sse')
      const row = await recorded(t, () => postJson(`${t.url}/gemini/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse`, SEARCH_BODY, { 'x-goog-api-key': KEY }))
      expect(row).toMatchObject({ model: 'gemini-2.5-pro', streamed: 1, estimated: 0, input_tokens: 17 + 102, output_tokens: 241 + 412 })
      expect(JSON.parse(row.usage_extra)).toEqual({ google_search_queries: 1, google_search_grounded: true })
      expect(row.cost_usd).toBe(tokens(row, 'gemini-2.5-pro') + fee)
    }
  })

  it('an answer that did not search costs no grounding, either way', async () => {
    answer(upstream, fixture('gemini/generate-content-cached-thoughts.json'))
    const row = await ask(paid)
    expect(row.usage_extra).toBeNull()
    expect(row.cost_usd).toBe(tokens(row, 'gemini-2.5-flash'))
  })
})

describe('a call without Google Search is not charged for it', () => {
  it('URL context (recorded: its answer names the fetched page as a web grounding chunk) keeps its tokens alone, paid or free', async () => {
    const body = { contents: [{ role: 'user', parts: [{ text: 'What is the first sentence on https://ai.pydantic.dev?' }] }], tools: [{ urlContext: {} }] }
    for (const t of [paid, free]) {
      answer(upstream, fixture('gemini/stream-generate-content-tool-use-prompt.sse'), 'sse')
      const row = await recorded(t, () => postJson(`${t.url}/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`, body, { 'x-goog-api-key': KEY }))
      expect(row).toMatchObject({ model: 'gemini-2.5-flash', input_tokens: 32 + 4610, output_tokens: 25 + 37, estimated: 0 })
      expect(row.cost_usd).toBe(tokens(row, 'gemini-2.5-flash'))
      expect(row.usage_extra).toBeNull()
    }
  })
})

describe('Vertex AI, Gemini 3: billed per search query', () => {
  const ask = (t: TestServer, method: string, file: string) => {
    answer(upstream, fixture(file), file.endsWith('.sse') ? 'sse' : 'json')
    return recorded(t, () => postJson(`${t.url}/vertex${GEMINI_VERTEX}/gemini-3-flash-preview:${method}`, SEARCH_BODY, VERTEX))
  }

  it('free: the query is recorded at $0; paid: $14 per 1,000 queries, kept by re-pricing', async () => {
    const f = await ask(free, 'generateContent', 'gemini/vertex-generate-content-google-search-gemini-3.json')
    expect(f).toMatchObject({ provider: 'vertex', model: 'gemini-3-flash-preview', input_tokens: 125, output_tokens: 250 + 456, priced: 1 })
    expect(JSON.parse(f.usage_extra)).toEqual({ google_search_queries: 1, google_search_grounded: true })
    expect(f.cost_usd).toBe(tokens(f, 'gemini-3-flash-preview'))
    expect(freeLog.some((l) => l.includes('gemini-3-flash-preview') && l.includes('1 search query') && l.includes('$14 per 1,000 search queries'))).toBe(true)

    const p = await ask(paid, 'generateContent', 'gemini/vertex-generate-content-google-search-gemini-3.json')
    expect(p.cost_usd).toBe(tokens(p, 'gemini-3-flash-preview') + 14 / 1000)
    expect(await costAfterReprice(paid, 'vertex', 'gemini-3-flash-preview', p.id)).toBe(p.cost_usd)
  })

  it('streamed: a query repeated across events counts once, an empty one not at all', async () => {
    const file = 'gemini/vertex-stream-generate-content-google-search-gemini-3-derived.sse'
    const f = await ask(free, 'streamGenerateContent?alt=sse', file)
    expect(f).toMatchObject({ streamed: 1, estimated: 0, input_tokens: 125, output_tokens: 250 + 456 })
    expect(JSON.parse(f.usage_extra)).toEqual({ google_search_queries: 2, google_search_grounded: true })
    expect(f.cost_usd).toBe(tokens(f, 'gemini-3-flash-preview'))

    const p = await ask(paid, 'streamGenerateContent?alt=sse', file)
    expect(p.cost_usd).toBe(tokens(p, 'gemini-3-flash-preview') + (2 * 14) / 1000)
  })

  it('a stream cut after its first event is estimated with the query it had reported', async () => {
    const events = fixture('gemini/vertex-stream-generate-content-google-search-gemini-3-derived.sse').toString().split('\r\n\r\n')
    answer(upstream, events[0] + '\r\n\r\n', 'sse')
    const row = await recorded(paid, () => postJson(`${paid.url}/vertex${GEMINI_VERTEX}/gemini-3-flash-preview:streamGenerateContent?alt=sse`, SEARCH_BODY, VERTEX))
    expect(row).toMatchObject({ streamed: 1, estimated: 1, input_tokens: 125 })
    expect(JSON.parse(row.usage_extra)).toEqual({ google_search_queries: 1, google_search_grounded: true })
    expect(row.cost_usd).toBeCloseTo(tokens(row, 'gemini-3-flash-preview') + 14 / 1000, 12)
  })
})

describe('Gemini Code Assist (Gemini CLI logged in with Google)', () => {
  it('the recorded answer in Code Assist\'s envelope: its grounded prompt counted and, paid, priced at its API-equivalent list', async () => {
    const wrapped = { response: JSON.parse(fixture('gemini/generate-content-google-search.json').toString()), traceId: 'trace-grounding-0001' }
    const body = { model: 'gemini-2.5-flash', project: 'burnrate-test-project', request: SEARCH_BODY }
    answer(upstream, wrapped)
    const row = await recorded(paid, () => postJson(`${paid.url}/code-assist/v1internal:generateContent`, body, { authorization: 'Bearer ya29.a0-grounding-login-0001' }))
    expect(row).toMatchObject({ provider: 'code-assist', model: 'gemini-2.5-flash', billing: 'subscription' })
    expect(JSON.parse(row.usage_extra)).toEqual({ google_search_queries: 2, google_search_grounded: true })
    expect(row.cost_usd).toBe(tokens(row, 'gemini-2.5-flash') + 35 / 1000)
  })
})
