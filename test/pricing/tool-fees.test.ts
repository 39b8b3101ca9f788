import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { Logger } from '../../src/main/log'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { answer, libraryPrice, recorded } from '../providers/ledger'
import { responsesAnswer } from '../support/responses-answer'

/**
 * Per-use tool fees on models whose price data lists none. OpenAI bills its built-in tools by the
 * call whatever the model: web search $10 per 1,000 calls, file search $2.50 per 1,000 (the pricing
 * page's "Built-in tools", as OpenAI staff quote it at community.openai.com/t/1363698). The bundled
 * price data gives `web_searches_kcount` / `storage_searches_kcount` to most OpenAI models but not
 * to o3-deep-research, o4-mini-deep-research, gpt-5.3, gpt-5.3-codex, o3-pro, o1…, and the library
 * prices a count only where the model's table has a price for it: those searches were recorded at
 * $0. Each call goes through a running Burnrate (real HTTP on 127.0.0.1, the mock upstream, the
 * real SQLite ledger).
 */

let upstream: MockUpstream
let t: TestServer
const warnings: string[] = []
const log: Logger = { debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error() {} }

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer({}, upstream.url, undefined, { log })
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})
beforeEach(() => {
  upstream.requests.length = 0
})

const OPENAI = { authorization: 'Bearer sk-proj-tool-fees-000000000001' }

const response = (model: string, output: object[], tools: object[], input: number, out: number) => responsesAnswer('resp_tool_fees_', model, output, tools, input, out)
const searchCall = (id: string, query: string) => ({ type: 'web_search_call', id, status: 'completed', action: { type: 'search', query } })
const message = (text: string) => ({ type: 'message', id: 'msg_tool_fees', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] })

describe('OpenAI built-in tools on models whose price data has no fee for them', () => {
  it('o3-deep-research: 25 web searches cost $0.25 on top of the tokens, and the ledger keeps the count', async () => {
    const model = 'o3-deep-research-2025-06-26'
    const searches = Array.from({ length: 25 }, (_, i) => searchCall(`ws_dr_${i}`, `otters in space, angle ${i}`))
    answer(upstream, response(model, [...searches, message('A report on otters in space...')], [{ type: 'web_search_preview' }], 60_000, 9_000))
    const row = await recorded(t, () => postJson(`${t.url}/v1/responses`, { model: 'o3-deep-research', tools: [{ type: 'web_search_preview' }], input: 'Research otters in space.' }, OPENAI))
    expect(row).toMatchObject({ provider: 'openai', model, input_tokens: 60_000, output_tokens: 9_000, priced: 1 })
    expect(JSON.parse(row.usage_extra)).toMatchObject({ web_searches: 25 })
    const tokens = libraryPrice('openai', { input_tokens: 60_000, output_tokens: 9_000 }, model, row.ts)
    // A reasoning model pays $10 per 1,000 searches with web_search_preview too.
    expect(row.cost_usd).toBeCloseTo(tokens + 25 * 0.01, 12)
  })

  it('gpt-5.3-codex with web search and file search: $10 and $2.50 per 1,000 calls, the second call as the first', async () => {
    const model = 'gpt-5.3-codex'
    const fileSearch = { type: 'file_search_call', id: 'fs_1', status: 'completed', queries: ['retry policy'], results: null }
    const tools = [{ type: 'web_search' }, { type: 'file_search', vector_store_ids: ['vs_1'] }]
    const tokens = (ts: number) => libraryPrice('openai', { input_tokens: 20_000, output_tokens: 1_000 }, model, ts)
    for (let i = 0; i < 2; i++) {
      // The first call finds the model in the data; the second prices with what the first found.
      answer(upstream, response(model, [searchCall(`ws_c${i}`, 'node 22 fetch keepalive'), fileSearch, message('Done.')], tools, 20_000, 1_000))
      const row = await recorded(t, () => postJson(`${t.url}/v1/responses`, { model, tools, input: 'fix it' }, OPENAI))
      expect(JSON.parse(row.usage_extra)).toEqual({ web_searches: 1, storage_searches: 1 })
      expect(row.cost_usd).toBeCloseTo(tokens(row.ts) + 0.01 + 0.0025, 12)
    }
    // The model's table prices both counts now: nothing to warn about.
    expect(warnings.filter((w) => w.includes('gpt-5.3-codex'))).toEqual([])
  })

  it('the price data fees a model has are kept (gpt-5 keeps its own $10 and $2.50)', async () => {
    const model = 'gpt-5-2025-08-07'
    const fileSearch = { type: 'file_search_call', id: 'fs_2', status: 'completed', queries: ['q'], results: null }
    answer(upstream, response(model, [searchCall('ws_g5', 'q'), fileSearch, message('ok')], [{ type: 'web_search' }, { type: 'file_search' }], 1_000, 100))
    const row = await recorded(t, () => postJson(`${t.url}/v1/responses`, { model: 'gpt-5', input: 'q' }, OPENAI))
    expect(row.cost_usd).toBe(libraryPrice('openai', { input_tokens: 1_000, output_tokens: 100, web_searches: 1, storage_searches: 1 }, model, row.ts))
  })
})

describe("Claude's web search where the price data has no fee for it", () => {
  // Anthropic bills web search $10 per 1,000 searches. Vertex AI offers the tool for Claude
  // (docs.cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/web-search), but no
  // Google page found says what it bills for it, so Vertex calls are not given Anthropic's fee:
  // the count is kept (re-pricing can charge it once a price is known) and the log says, once per
  // model, that the call's searches are priced at nothing.
  const usage = { input_tokens: 2_000, output_tokens: 400, server_tool_use: { web_search_requests: 3 } }
  const model = 'claude-sonnet-4-5-20250929'
  const claude = () => answer(upstream, { id: 'msg_tool_fees', type: 'message', role: 'assistant', model, content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage })
  const tools = [{ type: 'web_search_20250305', name: 'web_search' }]

  it("through Anthropic's API the searches are billed $10 per 1,000", async () => {
    claude()
    const row = await recorded(t, () => postJson(`${t.url}/v1/messages`, { model, max_tokens: 500, messages: [], tools }, { 'x-api-key': 'sk-ant-tool-fees-00000000001' }))
    expect(JSON.parse(row.usage_extra)).toEqual({ web_searches: 3 })
    expect(row.cost_usd).toBeCloseTo(libraryPrice('anthropic', { input_tokens: 2_000, output_tokens: 400 }, model, row.ts) + 0.03, 12)
  })

  it('on Vertex AI the count is kept, the tokens priced, and the log warns once for the model', async () => {
    const vertex = () =>
      recorded(t, () =>
        postJson(
          `${t.url}/vertex/v1/projects/p/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict`,
          { anthropic_version: 'vertex-2023-10-16', max_tokens: 500, messages: [], tools },
          { authorization: 'Bearer ya29.a0-tool-fees-000000001' },
        ),
      )
    claude()
    const first = await vertex()
    claude()
    const second = await vertex()
    for (const row of [first, second]) {
      expect(row).toMatchObject({ provider: 'vertex', model, input_tokens: 2_000, output_tokens: 400, priced: 1 })
      expect(JSON.parse(row.usage_extra)).toEqual({ web_searches: 3 })
      expect(row.cost_usd).toBe(libraryPrice('google', { input_tokens: 2_000, output_tokens: 400 }, model, row.ts))
    }
    const said = warnings.filter((w) => w.includes('google') && w.includes('claude-sonnet-4-5'))
    expect(said).toEqual([expect.stringMatching(/web_searches.*no price/)])
  })
})
