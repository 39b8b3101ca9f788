import { beforeEach, describe, expect, it } from 'vitest'
import { ADMIN_CONFIG } from '../admin/support'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { recorded } from '../providers/ledger'

/**
 * An OpenAI stream cut before it reports its usage is estimated, and keeps what the stream had
 * already told about its bill: the tier that served it (Priority at the model's Priority prices,
 * `"fast": true`; Flex at half of every token price, `"batch": true`), else the tier its request
 * explicitly asked for, and the web and file searches whose items completed before the cut.
 * (From the pricing review of 2026-12-05: the estimate was priced at the Standard list with
 * no searches and no mark in `usage_extra`.)
 */
const s = serverOverMockUpstream(ADMIN_CONFIG)
beforeEach(() => {
  s.upstream.requests.length = 0
})
const OPENAI = { authorization: 'Bearer sk-proj-review-cut-marks-00001' }
const sse = (events: [string | null, object][]) =>
  events.map(([name, data]) => Buffer.from(`${name ? `event: ${name}\n` : ''}data: ${JSON.stringify(data)}\n\n`))
const text = 'The quick brown fox jumps over the lazy dog. '.repeat(40)

/** A Responses stream of `resp` with `items` done, text, and its terminal event (cut before it). */
function responses(resp: Record<string, unknown>, items: object[] = []): Buffer[] {
  return sse([
    ['response.created', { type: 'response.created', sequence_number: 0, response: resp }],
    ['response.in_progress', { type: 'response.in_progress', sequence_number: 1, response: resp }],
    ...items.map((item, i) => ['response.output_item.done', { type: 'response.output_item.done', sequence_number: 2 + i, output_index: i, item }] as [string, object]),
    ...Array.from({ length: 6 }, (_, i) => ['response.output_text.delta', { type: 'response.output_text.delta', sequence_number: 50 + i, item_id: 'msg_1', output_index: items.length, content_index: 0, delta: text }] as [string, object]),
    ['response.completed', { type: 'response.completed', sequence_number: 99, response: { ...resp, status: 'completed', usage: { input_tokens: 10, output_tokens: 10 } } }],
  ])
}

/** The upstream streams `chunks` but the last, then resets the connection. */
function cutBeforeLast(chunks: Buffer[]): void {
  s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks, delayMs: 2, resetAfterChunks: chunks.length - 1 }))
}

const post = (path: string, body: object) => recorded(s.t, () => postJson(`${s.t.url}${path}`, body, OPENAI).catch(() => undefined))
/** gpt-5: Priority $2.50 / $20 per 1M, Standard $1.25 / $10. */
const gpt5 = (row: any, priority: boolean) => (priority ? row.input_tokens * 2.5 + row.output_tokens * 20 : row.input_tokens * 1.25 + row.output_tokens * 10) / 1e6
const RESP = { id: 'resp_cut_marks', object: 'response', status: 'in_progress', model: 'gpt-5-2025-08-07', output: [], tools: [], usage: null }

describe('a cut OpenAI stream is estimated at the tier that served it', () => {
  it('Responses: response.created names service_tier priority, cut before response.completed', async () => {
    cutBeforeLast(responses({ ...RESP, service_tier: 'priority' }))
    const row = await post('/v1/responses', { model: 'gpt-5', stream: true, service_tier: 'priority', input: 'Write a long story.' })
    expect(row).toMatchObject({ provider: 'openai', streamed: 1, estimated: 1, priced: 1 })
    expect(row.output_tokens).toBeGreaterThan(0)
    expect({ cost: row.cost_usd, extra: row.usage_extra }, `standard would be ${gpt5(row, false)}`).toEqual({ cost: expect.closeTo(gpt5(row, true), 12), extra: expect.stringContaining('"fast":true') })
  })

  it('Chat Completions: chunks name service_tier priority, cut before the usage chunk', async () => {
    const chunk = (delta: object, finish: string | null = null) => ({ id: 'chatcmpl-cut', object: 'chat.completion.chunk', created: 1764950000, model: 'gpt-5-2025-08-07', service_tier: 'priority', choices: [{ index: 0, delta, finish_reason: finish }] })
    cutBeforeLast(sse([[null, chunk({ role: 'assistant', content: '' })], ...Array.from({ length: 8 }, () => [null, chunk({ content: text })] as [null, object]), [null, chunk({}, 'stop')]]))
    const row = await post('/v1/chat/completions', { model: 'gpt-5', stream: true, stream_options: { include_usage: true }, service_tier: 'priority', messages: [{ role: 'user', content: 'Write a long story.' }] })
    expect(row).toMatchObject({ provider: 'openai', streamed: 1, estimated: 1, priced: 1 })
    expect({ cost: row.cost_usd, extra: row.usage_extra }, `standard would be ${gpt5(row, false)}`).toEqual({ cost: expect.closeTo(gpt5(row, true), 12), extra: expect.stringContaining('"fast":true') })
  })

  it('a stream Flex served (service_tier "flex") is estimated at the Flex (Batch) price', async () => {
    cutBeforeLast(responses({ ...RESP, model: 'o3-2025-04-16', service_tier: 'flex' }))
    const row = await post('/v1/responses', { model: 'o3', stream: true, service_tier: 'flex', input: 'Write a long story.' })
    expect(row).toMatchObject({ provider: 'openai', streamed: 1, estimated: 1, priced: 1 })
    // o3: $2 / $8 per 1M; Flex half of it.
    const flex = (row.input_tokens * 1 + row.output_tokens * 4) / 1e6
    expect({ cost: row.cost_usd, extra: row.usage_extra }).toEqual({ cost: expect.closeTo(flex, 12), extra: expect.stringContaining('"batch":true') })
  })

  it('a stream that names no tier takes the one its request explicitly asked for', async () => {
    cutBeforeLast(responses(RESP))
    const row = await post('/v1/responses', { model: 'gpt-5', stream: true, service_tier: 'priority', input: 'Write a long story.' })
    expect(row).toMatchObject({ provider: 'openai', estimated: 1, priced: 1 })
    expect({ cost: row.cost_usd, extra: row.usage_extra }).toEqual({ cost: expect.closeTo(gpt5(row, true), 12), extra: expect.stringContaining('"fast":true') })
  })

  it('the tier the stream named wins over the request\'s (a Priority request served at default), and "auto" asks for none', async () => {
    cutBeforeLast(responses({ ...RESP, service_tier: 'default' }))
    const downgraded = await post('/v1/responses', { model: 'gpt-5', stream: true, service_tier: 'priority', input: 'Write a long story.' })
    expect({ cost: downgraded.cost_usd, extra: downgraded.usage_extra, estimated: downgraded.estimated }).toEqual({ cost: expect.closeTo(gpt5(downgraded, false), 12), extra: null, estimated: 1 })
    cutBeforeLast(responses({ ...RESP, service_tier: 'auto' }))
    const auto = await post('/v1/responses', { model: 'gpt-5', stream: true, service_tier: 'auto', input: 'Write a long story.' })
    expect({ cost: auto.cost_usd, extra: auto.usage_extra, estimated: auto.estimated }).toEqual({ cost: expect.closeTo(gpt5(auto, false), 12), extra: null, estimated: 1 })
  })
})

describe('a cut Responses stream keeps the searches it made', () => {
  it('web searches completed before the cut are billed (each item once), open_page is not', async () => {
    const resp = { ...RESP, model: 'o3-deep-research-2025-06-26', tools: [{ type: 'web_search' }] }
    const searches = Array.from({ length: 5 }, (_, i) => ({ id: `ws_${i}`, type: 'web_search_call', status: 'completed', action: { type: 'search', query: `q${i}` } }))
    const opened = { id: 'ws_open', type: 'web_search_call', status: 'completed', action: { type: 'open_page', url: 'https://example.com' } }
    cutBeforeLast(responses(resp, [...searches, searches[0]!, opened]))
    const row = await post('/v1/responses', { model: 'o3-deep-research', stream: true, tools: [{ type: 'web_search' }], input: 'Research.' })
    expect(row).toMatchObject({ provider: 'openai', streamed: 1, estimated: 1, priced: 1 })
    // o3-deep-research: $10 / $40 per 1M tokens; five searches at $10 per 1,000 were billed on top.
    expect(String(row.usage_extra)).toContain('"web_searches":5')
    expect(row.cost_usd).toBeCloseTo((row.input_tokens * 10 + row.output_tokens * 40) / 1e6 + 0.05, 12)
  })

  it('file searches, and web searches made with web_search_preview, keep their rate', async () => {
    const resp = { ...RESP, model: 'gpt-4o-2024-08-06', tools: [{ type: 'web_search_preview' }, { type: 'file_search' }] }
    const items = [
      { id: 'ws_1', type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'q' } },
      { id: 'fs_1', type: 'file_search_call', status: 'completed', queries: ['q'], results: null },
      { id: 'fs_2', type: 'file_search_call', status: 'completed', queries: ['r'], results: null },
    ]
    cutBeforeLast(responses(resp, items))
    const row = await post('/v1/responses', { model: 'gpt-4o', stream: true, tools: [{ type: 'web_search_preview' }, { type: 'file_search', vector_store_ids: ['vs_1'] }], input: 'Look it up.' })
    expect(row).toMatchObject({ provider: 'openai', estimated: 1, priced: 1 })
    expect(JSON.parse(row.usage_extra)).toMatchObject({ web_searches: 1, storage_searches: 2, web_search_preview: true })
    // gpt-4o: $2.50 / $10 per 1M; a preview search $25 per 1,000, a file search $2.50 per 1,000.
    expect(row.cost_usd).toBeCloseTo((row.input_tokens * 2.5 + row.output_tokens * 10) / 1e6 + 0.025 + 0.005, 12)
  })
})
