import { describe, expect, it } from 'vitest'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'

/**
 * A Bedrock request that asks for the Priority tier (`X-Amzn-Bedrock-Service-Tier: priority`, what
 * Claude Code sends for `ANTHROPIC_BEDROCK_SERVICE_TIER`; Converse's `serviceTier` in the body) is
 * reserved by a `block` rule at the model's fast price (a `speed: fast` override), as it is billed
 * when that tier serves it: at the standard price it passed a limit its bill would break.
 */

const MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'
const PRIORITY = { model: MODEL, speed: 'fast', input_mtok: 5.775, output_mtok: 28.875 }
/** A model of Bedrock's OpenAI-compatible API, at a made-up fast price far above its list ($0.15 / $0.60 per 1M). */
const OSS = 'openai.gpt-oss-120b-1:0'
const OSS_FAST = { model: OSS, speed: 'fast', input_mtok: 50, output_mtok: 50 }
// 10,000 output tokens: $0.165 at the standard list ($16.50 per 1M), $0.28875 at the priority price.
const MAX_TOKENS = 10_000
const LIMIT = 0.2
const s = serverOverMockUpstream({
  pricing: { overrides: [PRIORITY, OSS_FAST] },
  budgets: { rules: [{ api_key_pattern: 'ABSK*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' }] },
})

const BASE = '/bedrock/us-east-1'
const HEADERS = { authorization: 'Bearer ABSKQmVkcm9ja0FQSUtleS1wcmlvcml0eS1yZXNlcnZlLTE=' }

function answerSmall(): void {
  s.upstream.setResponder(() => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: Buffer.from(JSON.stringify({ id: 'msg_small', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } })),
  }))
}

describe("a Bedrock request for the Priority tier under a block rule", () => {
  it('is reserved at the priority price (refused under a limit its standard price fits), a standard one admitted', async () => {
    answerSmall()
    const body = { anthropic_version: 'bedrock-2023-05-31', max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'hi' }] }
    const standard = await postJson(`${s.t.url}${BASE}/model/${MODEL}/invoke`, body, HEADERS)
    expect(standard.status).toBe(200)
    const invoke = await postJson(`${s.t.url}${BASE}/model/${MODEL}/invoke`, body, { ...HEADERS, 'x-amzn-bedrock-service-tier': 'priority' })
    expect(invoke.status).toBe(429)
    const converse = await postJson(`${s.t.url}${BASE}/model/${MODEL}/converse`, { messages: [{ role: 'user', content: [{ text: 'hi' }] }], inferenceConfig: { maxTokens: MAX_TOKENS }, serviceTier: { type: 'priority' } }, HEADERS)
    expect(converse.status).toBe(429)
  })

  it("a Claude InvokeModel request asking for fast mode (its body's speed: \"fast\", with the fast-mode beta) is reserved at the fast price", async () => {
    answerSmall()
    const body = { anthropic_version: 'bedrock-2023-05-31', anthropic_beta: ['fast-mode-2026-02-01'], speed: 'fast', max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'hi' }] }
    const invoke = await postJson(`${s.t.url}${BASE}/model/${MODEL}/invoke`, body, HEADERS)
    expect(invoke.status).toBe(429)
    const stream = await postJson(`${s.t.url}${BASE}/model/${MODEL}/invoke-with-response-stream`, body, HEADERS)
    expect(stream.status).toBe(429)
  })

  it('a Converse request asking for Claude\'s fast mode (additionalModelRequestFields.speed: "fast", the Messages field Converse passes to the model) is reserved at the fast price, its stream too', async () => {
    answerSmall()
    const body = { messages: [{ role: 'user', content: [{ text: 'hi' }] }], inferenceConfig: { maxTokens: MAX_TOKENS }, additionalModelRequestFields: { anthropic_beta: ['fast-mode-2026-02-01'], speed: 'fast' } }
    expect((await postJson(`${s.t.url}${BASE}/model/${MODEL}/converse`, body, HEADERS)).status).toBe(429)
    expect((await postJson(`${s.t.url}${BASE}/model/${MODEL}/converse-stream`, body, HEADERS)).status).toBe(429)
  })

  it("the OpenAI-compatible API (…/openai/v1/chat/completions): the Priority tier asked by its header or its body's service_tier is reserved at the fast price", async () => {
    s.upstream.setResponder(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify({ id: 'chatcmpl-b', object: 'chat.completion', created: 1, model: OSS, choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } })),
    }))
    const body = { model: OSS, max_completion_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'hi' }] }
    const url = `${s.t.url}${BASE}/openai/v1/chat/completions`
    expect((await postJson(url, body, HEADERS)).status).toBe(200)
    expect((await postJson(url, body, { ...HEADERS, 'x-amzn-bedrock-service-tier': 'priority' })).status).toBe(429)
    expect((await postJson(url, { ...body, service_tier: 'priority' }, HEADERS)).status).toBe(429)
  })
})
