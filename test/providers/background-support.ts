import { calcPrice } from '@pydantic/genai-prices'
import { fixture, fixtureJson, sseChunks } from '../support/fixtures'
import type { Reply, Responder } from '../support/mock-upstream'

// OpenAI background responses (`background: true`), in the Responses API's real shapes: the
// recorded Responses bodies of test/fixtures as a background response queued, then finished.

export const MODEL = 'o3-deep-research-2025-06-26'

/** The recorded Responses body (test/fixtures) as a background response of `id` in `status`, with `usage`. */
export function backgroundBody(id: string, status: string, usage: Record<string, unknown> | null, output: unknown[] = []): Record<string, unknown> {
  return {
    ...fixtureJson('openai-responses/responses-nonstream-reasoning.json'),
    id,
    model: MODEL,
    status,
    background: true,
    output,
    usage,
  }
}

/** A deep-research answer's usage, in the Responses API's shape. */
export const USAGE = {
  input_tokens: 40_000,
  input_tokens_details: { cached_tokens: 10_000 },
  output_tokens: 120_000,
  output_tokens_details: { reasoning_tokens: 100_000 },
  total_tokens: 160_000,
}
/** Two web searches (billed per call) and the message. */
export const OUTPUT = [
  { id: 'ws_1', type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'otters' } },
  { id: 'ws_2', type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'space' } },
  { id: 'ws_3', type: 'web_search_call', status: 'completed', action: { type: 'open_page', url: 'https://example.com' } },
  { id: 'msg_1', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', annotations: [], text: 'A report.' }] },
]
/**
 * What that answer is billed: its tokens at the price data's rates, and its two searches at OpenAI's
 * $10 per 1,000 web search calls, which the data has no price for on o3-deep-research
 * (src/main/pricing/tool-fees.ts).
 */
export const REAL_COST =
  calcPrice({ input_tokens: 40_000, cache_read_tokens: 10_000, output_tokens: 120_000 }, MODEL, { providerId: 'openai' })!.total_price + (2 * 10) / 1000

/**
 * `GET /v1/responses/{id}?stream=true` of a background response: the recorded Responses stream
 * (test/fixtures) as that response's events, its `response.completed` with `usage`.
 */
export function backgroundStream(id: string, usage: Record<string, unknown>): Buffer {
  const events = fixture('openai-responses/responses-stream-basic.sse').toString().split('\n\n').filter((e) => e.trim())
  const out = events.map((e) => {
    const name = /^event: (.*)$/m.exec(e)![1]
    const data = JSON.parse(/^data: (.*)$/m.exec(e)![1])
    if (data.response) {
      Object.assign(data.response, { id, model: MODEL, background: true })
      if (name === 'response.completed') Object.assign(data.response, { usage, output: OUTPUT })
    }
    return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`
  })
  return Buffer.from(out.join(''))
}

export const json = (body: unknown): Reply => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })


/** What the mock answers about a response (GET /v1/responses/{id}, its cancel), per id: a body, or a whole reply. */
export type Answers = Map<string, Record<string, unknown> | Reply>

/**
 * The mock OpenAI: `POST /v1/responses` answers a queued background response whose id is the
 * request's `metadata.id` (or streams it, with `stream: true`); `GET /v1/responses/{id}` (and `POST …/cancel`) answers what `answers`
 * holds for it, else 404; any other GET an empty list.
 */
export function backgroundResponder(answers: Answers): Responder {
  return (req) => {
    const get = /^\/v1\/responses\/([^/?]+)/.exec(req.url)
    if (get) {
      const a = answers.get(get[1])
      if (!a) return { status: 404, headers: { 'content-type': 'application/json' }, body: '{"error":{"message":"not found"}}' }
      return typeof a.status === 'number' ? (a as Reply) : json(a)
    }
    if (req.method === 'GET') return json({ object: 'list', data: [] }) // e.g. GET /v1/models
    const body = JSON.parse(req.body.toString())
    // `background: true, stream: true`: the response streams from the POST (cut after 6 events when `metadata.cut`).
    if (body.stream) {
      const chunks = sseChunks(backgroundStream(body.metadata.id, USAGE), false)
      return { status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8' }, chunks, delayMs: 1, resetAfterChunks: body.metadata.cut ? 6 : undefined }
    }
    return json(backgroundBody(body.metadata.id, 'queued', null))
  }
}
