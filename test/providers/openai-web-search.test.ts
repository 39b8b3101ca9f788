import Database from 'better-sqlite3'
import { beforeEach, describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, libraryPrice, recorded } from './ledger'
import { responsesAnswer } from '../support/responses-answer'

/**
 * OpenAI's web search fee by the tool that ran it (the pricing page's "Built-in tools", as OpenAI
 * staff quote it at community.openai.com/t/1363698, and community.openai.com/t/1347529 reproduces
 * it on gpt-4.1-mini): the GA `web_search` tool is $10 per 1,000 calls on every model, as is
 * `web_search_preview` on a reasoning model (gpt-5, the o-series), but `web_search_preview` on a
 * non-reasoning model (gpt-4o, gpt-4.1 and their minis) is $25 per 1,000 calls, its search content
 * tokens free. Chat Completions' search models (gpt-4o-search-preview, gpt-4o-mini-search-preview)
 * search the web before every answer ("a model such as gpt-4o-search-preview in the chat
 * completions API", OpenAI staff at community.openai.com/t/1236954/3), each answer one search at
 * that rate. Each call goes through a running Burnrate (real HTTP on 127.0.0.1, the mock upstream,
 * the real SQLite ledger); re-pricing (the admin API's) must charge what the call was charged.
 */
const s = serverOverMockUpstream(ADMIN_CONFIG)
beforeEach(() => {
  s.upstream.requests.length = 0
})

const OPENAI = { authorization: 'Bearer sk-proj-web-search-00000000001' }

const response = (model: string, output: object[], tools: object[], input: number, out: number) => responsesAnswer('resp_web_search_', model, output, tools, input, out)
// A web_search_preview call item as gpt-4.1 answers it (no `action`), and one of the GA tool.
const previewCall = (id: string) => ({ type: 'web_search_call', id, status: 'completed' })
const searchCall = (id: string) => ({ type: 'web_search_call', id, status: 'completed', action: { type: 'search', query: 'events NYC' } })
const message = (text: string) => ({ type: 'message', id: 'msg_ws', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] })
const PREVIEW = [{ type: 'web_search_preview', search_context_size: 'medium', user_location: { type: 'approximate', country: 'US' } }]

/** A Responses stream: created, the output items done, completed with the whole response. */
function responsesStream(r: ReturnType<typeof response>): string {
  const events: [string, object][] = [['response.created', { type: 'response.created', response: { ...r, status: 'in_progress', output: [], usage: null } }]]
  r.output.forEach((item, i) => events.push(['response.output_item.done', { type: 'response.output_item.done', output_index: i, item }]))
  events.push(['response.completed', { type: 'response.completed', response: r }])
  return events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`).join('')
}

async function repriceUnchanged(model: string, id: number, cost: number): Promise<void> {
  const r = await admin(s.t.url, 'POST', `/prices/openai/${model}/reprice?all=true`)
  expect(r.status).toBe(200)
  expect(await r.json()).toMatchObject({ repriced: 0, unpriced: 0 })
  const db = new Database(s.t.dbFile, { readonly: true })
  try {
    expect((db.prepare('SELECT cost_usd FROM calls WHERE id = ?').get(id) as { cost_usd: number }).cost_usd).toBe(cost)
  } finally {
    db.close()
  }
}

describe('Responses: web_search_preview on a non-reasoning model', () => {
  it('gpt-4.1 pays $25 per 1,000 searches, marked so that re-pricing charges the same', async () => {
    const model = 'gpt-4.1-2025-04-14'
    answer(s.upstream, response(model, [previewCall('ws_1'), message('Here are some events...')], PREVIEW, 347, 540))
    const row = await recorded(s.t, () => postJson(`${s.t.url}/v1/responses`, { model: 'gpt-4.1', tools: [{ type: 'web_search_preview' }], input: 'What is on in NYC?' }, OPENAI))
    expect(row).toMatchObject({ provider: 'openai', model, input_tokens: 347, output_tokens: 540, priced: 1 })
    expect(JSON.parse(row.usage_extra)).toEqual({ web_searches: 1, web_search_preview: true })
    const tokens = libraryPrice('openai', { input_tokens: 347, output_tokens: 540 }, model, row.ts)
    expect(row.cost_usd).toBeCloseTo(tokens + 0.025, 12)
    await repriceUnchanged(model, row.id, row.cost_usd)
  })

  it('streamed: gpt-4o-mini with the dated preview tool, two searches, $0.05', async () => {
    const model = 'gpt-4o-mini-2024-07-18'
    const r = response(model, [previewCall('ws_2'), previewCall('ws_3'), message('Sunny.')], [{ type: 'web_search_preview_2025_03_11', search_context_size: 'low' }], 300, 80)
    answer(s.upstream, responsesStream(r), 'sse')
    const row = await recorded(s.t, () => postJson(`${s.t.url}/v1/responses`, { model: 'gpt-4o-mini', stream: true, tools: [{ type: 'web_search_preview_2025_03_11' }], input: 'Weather?' }, OPENAI))
    expect(row).toMatchObject({ model, input_tokens: 300, output_tokens: 80, streamed: 1, estimated: 0 })
    expect(JSON.parse(row.usage_extra)).toEqual({ web_searches: 2, web_search_preview: true })
    expect(row.cost_usd).toBeCloseTo(libraryPrice('openai', { input_tokens: 300, output_tokens: 80 }, model, row.ts) + 2 * 0.025, 12)
  })

  it('the GA web_search tool on the same model is $10 per 1,000, and not marked', async () => {
    const model = 'gpt-4.1-2025-04-14'
    answer(s.upstream, response(model, [searchCall('ws_4'), message('Sunny.')], [{ type: 'web_search', search_context_size: 'medium' }], 347, 540))
    const row = await recorded(s.t, () => postJson(`${s.t.url}/v1/responses`, { model: 'gpt-4.1', tools: [{ type: 'web_search' }], input: 'Weather in SF?' }, OPENAI))
    expect(JSON.parse(row.usage_extra)).toEqual({ web_searches: 1 })
    expect(row.cost_usd).toBeCloseTo(libraryPrice('openai', { input_tokens: 347, output_tokens: 540 }, model, row.ts) + 0.01, 12)
  })

  it('web_search_preview on a reasoning model (o3) stays $10 per 1,000', async () => {
    const model = 'o3-2025-04-16'
    answer(s.upstream, response(model, [searchCall('ws_5'), message('ok')], [{ type: 'web_search_preview' }], 1_000, 200))
    const row = await recorded(s.t, () => postJson(`${s.t.url}/v1/responses`, { model: 'o3', tools: [{ type: 'web_search_preview' }], input: 'q' }, OPENAI))
    expect(JSON.parse(row.usage_extra)).toEqual({ web_searches: 1, web_search_preview: true })
    expect(row.cost_usd).toBeCloseTo(libraryPrice('openai', { input_tokens: 1_000, output_tokens: 200 }, model, row.ts) + 0.01, 12)
  })
})

describe('Chat Completions: the search models search on every call', () => {
  const model = 'gpt-4o-mini-search-preview-2025-03-11'
  const completion = {
    id: 'chatcmpl-bf3e7207-9819-40a2-9225-87e8666fe23d',
    object: 'chat.completion',
    created: 1755135425,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: 'Check out httpbin.org',
          annotations: [{ type: 'url_citation', url_citation: { end_index: 21, start_index: 10, title: 'httpbin.org', url: 'https://httpbin.org/?utm_source=openai' } }],
        },
        finish_reason: 'stop',
      },
    ],
    usage: { prompt_tokens: 14, completion_tokens: 192, total_tokens: 206 },
  }
  const ask = (body: object) => recorded(s.t, () => postJson(`${s.t.url}/v1/chat/completions`, { messages: [{ role: 'user', content: 'A site to test HTTP?' }], ...body }, OPENAI))

  it('an answer of gpt-4o-mini-search-preview is one search at $25 per 1,000; re-pricing charges the same', async () => {
    answer(s.upstream, completion)
    const row = await ask({ model: 'gpt-4o-mini-search-preview', web_search_options: {} })
    expect(row).toMatchObject({ provider: 'openai', model, input_tokens: 14, output_tokens: 192, priced: 1, estimated: 0 })
    expect(JSON.parse(row.usage_extra)).toEqual({ web_searches: 1, web_search_preview: true })
    expect(row.cost_usd).toBeCloseTo(libraryPrice('openai', { input_tokens: 14, output_tokens: 192 }, model, row.ts) + 0.025, 12)
    await repriceUnchanged(model, row.id, row.cost_usd)
  })

  it('so is a streamed one, with its usage (include_usage) or estimated without it', async () => {
    const chunk = (o: object) => `data: ${JSON.stringify({ id: 'chatcmpl-ws', object: 'chat.completion.chunk', created: 1755135425, model, ...o })}\n\n`
    const text = chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Check out httpbin.org' }, finish_reason: null }] })
    const end = chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })
    answer(s.upstream, text + end + chunk({ choices: [], usage: { prompt_tokens: 14, completion_tokens: 192, total_tokens: 206 } }) + 'data: [DONE]\n\n', 'sse')
    const withUsage = await ask({ model: 'gpt-4o-mini-search-preview', stream: true, stream_options: { include_usage: true } })
    expect(withUsage).toMatchObject({ input_tokens: 14, output_tokens: 192, streamed: 1, estimated: 0 })
    expect(JSON.parse(withUsage.usage_extra)).toEqual({ web_searches: 1, web_search_preview: true })
    expect(withUsage.cost_usd).toBeCloseTo(libraryPrice('openai', { input_tokens: 14, output_tokens: 192 }, model, withUsage.ts) + 0.025, 12)

    answer(s.upstream, text + end + 'data: [DONE]\n\n', 'sse')
    const estimated = await ask({ model: 'gpt-4o-mini-search-preview', stream: true })
    expect(estimated).toMatchObject({ streamed: 1, estimated: 1, priced: 1 })
    expect(JSON.parse(estimated.usage_extra)).toEqual({ web_searches: 1, web_search_preview: true })
    const tokens = libraryPrice('openai', { input_tokens: estimated.input_tokens, output_tokens: estimated.output_tokens }, model, estimated.ts)
    expect(estimated.cost_usd).toBeCloseTo(tokens + 0.025, 12)
  })

  it('gpt-4o-search-preview is one search per answer even without web_search_options; a plain chat call is none', async () => {
    const big = 'gpt-4o-search-preview-2025-03-11'
    answer(s.upstream, { ...completion, model: big })
    const row = await ask({ model: 'gpt-4o-search-preview' })
    expect(JSON.parse(row.usage_extra)).toEqual({ web_searches: 1, web_search_preview: true })
    expect(row.cost_usd).toBeCloseTo(libraryPrice('openai', { input_tokens: 14, output_tokens: 192 }, big, row.ts) + 0.025, 12)

    answer(s.upstream, { ...completion, model: 'gpt-4o-mini-2024-07-18' })
    const plain = await ask({ model: 'gpt-4o-mini' })
    expect(plain.usage_extra).toBeNull()
    expect(plain.cost_usd).toBe(libraryPrice('openai', { input_tokens: 14, output_tokens: 192 }, 'gpt-4o-mini-2024-07-18', plain.ts))
  })

  it('a refused call is not charged a search', async () => {
    s.upstream.setResponder(() => ({ status: 400, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: { message: 'bad', type: 'invalid_request_error', code: null } }) }))
    const row = await ask({ model: 'gpt-4o-mini-search-preview', web_search_options: {} })
    expect(row).toMatchObject({ status: 400, cost_usd: 0 })
    expect(row.usage_extra).toBeNull()
  })
})
