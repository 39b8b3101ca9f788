import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * `reserve: expected` learns what a model's prompts cost per request-body byte. A Responses turn
 * that continues a stored conversation (`previous_response_id`: Codex's later turns on its
 * WebSocket, the Agents SDK) sends a small body and is billed for the whole conversation; learnt
 * from, it made a new conversation's 40 KB prompt "expected" to cost over $100 (real: about a
 * cent), and while that call was in flight every other call of the key was refused at $1.50 of a
 * $5 limit. Such turns are not learnt from, and no expectation is above the call's worst case.
 */
let upstream: MockUpstream
let t: TestServer
const inputTokens = 200_000
let release: (() => void) | null = null

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer({ timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-exp-*', daily_limit_usd: 5, action: 'block' }] } }, upstream.url)
  upstream.setResponder(async (req) => {
    // The new conversation's answer waits until the test lets it go.
    if (req.body.length > 30_000) await new Promise<void>((r) => (release = r))
    const tokens = req.body.length > 30_000 ? 10_000 : inputTokens
    return {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        id: `resp_${Math.random().toString(36).slice(2)}`, object: 'response', created_at: 1, status: 'completed', model: 'gpt-5-2025-08-07',
        output: [{ id: 'msg_1', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'ok', annotations: [] }] }],
        usage: { input_tokens: tokens, input_tokens_details: { cached_tokens: 0 }, output_tokens: 50, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: tokens + 50 },
      }),
    }
  })
})
afterAll(async () => {
  release?.()
  await t.cleanup()
  await upstream.close()
})

describe('expected reservations after turns that continue a stored conversation', () => {
  it("a new conversation's call does not hold the key's budget for far more than it can cost", async () => {
    const auth = { authorization: 'Bearer sk-exp-aaaaaaaaaaaa-0001' }
    // Six continued turns, each billed 200k prompt tokens ($0.25) for a body of a few dozen bytes.
    for (let i = 0; i < 6; i++) {
      expect((await postJson(`${t.url}/v1/responses`, { model: 'gpt-5', previous_response_id: `resp_prev${i}`, input: 'go on', max_output_tokens: 2000 }, auth)).status).toBe(200)
    }
    // A new conversation (40 KB: about 10k tokens, about $0.013) is in flight...
    const big = postJson(`${t.url}/v1/responses`, { model: 'gpt-5', input: 'x '.repeat(20_000), max_output_tokens: 2000 }, auth)
    await eventually(() => release !== null, 10_000)
    // ...and a small call of the same key, $1.50 spent of $5, goes through.
    const small = await postJson(`${t.url}/v1/responses`, { model: 'gpt-5', input: 'hello', max_output_tokens: 2000 }, auth)
    expect(small.status, small.text).toBe(200)
    release!()
    expect((await big).status).toBe(200)
  })
})
