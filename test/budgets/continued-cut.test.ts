import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { callsOf } from './support'

/**
 * A Responses turn continuing a stored conversation whose stream is cut before its usage arrives
 * is recorded with an estimate of its body (what is new), and remembered for the turns continuing
 * it. Its prompt held the conversation it continued as well: remembered with its body alone, a turn
 * continuing the cut response reserved two cents where the conversation behind it costs a
 * quarter of a dollar, and was admitted under a $0.30 limit it would pass.
 */
const LIMIT = 0.3
// The first answer: a 200k-token prompt (150k of it cached) and 1,000 output tokens of gpt-5.
const INPUT = 200_000
const CACHED = 150_000
const OUTPUT = 1_000

let upstream: MockUpstream
let t: TestServer

const sse = (type: string, data: Record<string, unknown>) => Buffer.from(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`)

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer(
    { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-cut-max-*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' }] } },
    upstream.url,
  )
  upstream.setResponder((req) => {
    const body = JSON.parse(req.body.toString('utf8'))
    if (!body.stream) {
      return {
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          id: 'resp_first', object: 'response', created_at: 1, status: 'completed', model: 'gpt-5-2025-08-07',
          output: [{ id: 'msg_1', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'ok', annotations: [] }] }],
          usage: { input_tokens: INPUT, input_tokens_details: { cached_tokens: CACHED }, output_tokens: OUTPUT, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: INPUT + OUTPUT },
        }),
      }
    }
    // Streamed: named, a little text, then the connection is reset (no response.completed, no usage).
    const response = { id: 'resp_cut', object: 'response', created_at: 2, status: 'in_progress', model: 'gpt-5-2025-08-07', output: [], usage: null }
    return {
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: [sse('response.created', { response }), sse('response.output_text.delta', { item_id: 'msg_2', output_index: 0, content_index: 0, delta: 'Working on it' })],
      resetAfterChunks: 2,
    }
  })
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

const turn = (key: string, extra: Record<string, unknown>) =>
  postJson(`${t.url}/v1/responses`, { model: 'gpt-5', input: 'go on', max_output_tokens: 2000, ...extra }, { authorization: `Bearer ${key}` })

describe('a turn continuing a response whose stream was cut before its usage', () => {
  it('reserves the conversation the cut turn carried, not only the cut turn body', async () => {
    // The conversation is held by a key no rule limits; a key under the $0.30 rule continues it.
    const free = 'sk-cut-free-aaaaaaaaaaaa-0001'
    const key = 'sk-cut-max-bbbbbbbbbbbb-0002'
    const first = await turn(free, {})
    expect(first.status, first.text).toBe(200)
    // The cut turn continues the first answer: its prompt was the first's 201k tokens and its body.
    await turn(free, { previous_response_id: 'resp_first', stream: true }).catch(() => null)
    await eventually(() => callsOf(t, free).length === 2)
    expect(callsOf(t, free)[1].status).toBe(200)
    // Spend $0.09 of the key's $0.30 (a turn of its own conversation, as the first).
    expect((await turn(key, {})).status).toBe(200)
    // A turn continuing the cut response carries ~201k tokens of uncached input ($0.25) and its
    // output ($0.02): more than the $0.21 left.
    const next = await turn(key, { previous_response_id: 'resp_cut' })
    expect(next.status, next.text).toBe(429)
    expect(next.json().error.message).toMatch(/could cost up to/)
  })
})
