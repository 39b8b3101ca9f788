import { describe, expect, it } from 'vitest'
import { libraryPrice, recorded } from '../providers/ledger'
import { eventMessage } from '../support/event-stream'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'

/**
 * A Bedrock stream cut before it said which speed or tier served it (an InvokeModel stream before
 * its first `chunk`, so before `message_start`; a ConverseStream before its `metadata` event; an
 * OpenAI-compatible API stream before its usage) is estimated from its request, at the speed or
 * tier it asked for: fast mode by a Claude InvokeModel body's `speed: "fast"` or Converse's
 * `additionalModelRequestFields.speed`, the Priority tier by `X-Amzn-Bedrock-Service-Tier`,
 * Converse's `serviceTier` or the OpenAI-compatible API's `service_tier`, unless the answer's own
 * tier header named another. Such an estimate is marked `"fast": true`
 * and priced at the model's `speed: fast` override, as the call was reserved; builds before this
 * one estimated it at the standard price. Real HTTP on 127.0.0.1, the mock upstream cutting the
 * connection after its headers, the real SQLite ledger.
 */

const MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'
/** Made-up fast (Priority, fast-mode) prices for the test: what a user copies from Bedrock's pricing page. */
const FAST = { model: MODEL, speed: 'fast', input_mtok: 5.775, output_mtok: 28.875 }
/** A model of Bedrock's OpenAI-compatible API, at a made-up fast (Priority) price far above its list ($0.15 / $0.60 per 1M). */
const OSS = 'openai.gpt-oss-120b-1:0'
const OSS_FAST = { model: OSS, speed: 'fast', input_mtok: 50, output_mtok: 50 }
const s = serverOverMockUpstream({ pricing: { overrides: [FAST, OSS_FAST] } })

const BASE = `/bedrock/us-east-1/model/${MODEL}`
const HEADERS = { authorization: 'Bearer ABSKQmVkcm9ja0FQSUtleS1jdXQtZmFzdC0wMDAx' }
const PROMPT = 'Summarise the plot of a long novel in detail. '.repeat(200)
const invokeBody = (extra: object) => ({ anthropic_version: 'bedrock-2023-05-31', max_tokens: 4096, messages: [{ role: 'user', content: PROMPT }], ...extra })
const fast = (row: any) => (row.input_tokens * FAST.input_mtok + row.output_tokens * FAST.output_mtok) / 1e6
const standard = (row: any) => libraryPrice('aws', { input_tokens: row.input_tokens, output_tokens: row.output_tokens }, MODEL, row.ts)

/** The upstream's headers (with its tier header when given) arrive, then the connection is reset before the stream's first message. */
function cutBeforeStart(tier?: string): void {
  const headers: Record<string, string> = { 'content-type': 'application/vnd.amazon.eventstream' }
  if (tier) headers['x-amzn-bedrock-service-tier'] = tier
  s.upstream.setResponder(() => ({ status: 200, headers, chunks: [eventMessage('messageStart', { role: 'assistant' })], resetAfterChunks: 0, delayMs: 1 }))
}

const post = (op: string, body: unknown, headers: Record<string, string> = {}) => recorded(s.t, () => postJson(`${s.t.url}${BASE}/${op}`, body, { ...HEADERS, ...headers }).catch(() => undefined))

function expectFast(row: any): void {
  expect(row).toMatchObject({ provider: 'bedrock', model: MODEL, estimated: 1, priced: 1 })
  expect(row.input_tokens).toBeGreaterThan(1000)
  expect({ cost: row.cost_usd, extra: row.usage_extra }, `standard would be ${standard(row)}`).toEqual({ cost: expect.closeTo(fast(row), 12), extra: expect.stringContaining('"fast":true') })
}

describe('a Bedrock stream cut before it said which speed or tier served it', () => {
  it('a Claude InvokeModel stream that asked for fast mode (speed: "fast") is estimated at the fast price, marked fast', async () => {
    cutBeforeStart()
    expectFast(await post('invoke-with-response-stream', invokeBody({ anthropic_beta: ['fast-mode-2026-02-01'], speed: 'fast' })))
  })

  it('an InvokeModel stream that asked for the Priority tier is estimated at the fast price when its answer says priority, at the list when it names another tier', async () => {
    cutBeforeStart('priority')
    expectFast(await post('invoke-with-response-stream', invokeBody({}), { 'x-amzn-bedrock-service-tier': 'priority' }))
    cutBeforeStart()
    expectFast(await post('invoke-with-response-stream', invokeBody({}), { 'x-amzn-bedrock-service-tier': 'priority' }))
    cutBeforeStart('default')
    const served = await post('invoke-with-response-stream', invokeBody({}), { 'x-amzn-bedrock-service-tier': 'priority' })
    expect(served).toMatchObject({ estimated: 1, priced: 1, usage_extra: null })
    expect(served.cost_usd).toBe(standard(served))
  })

  it('a ConverseStream that asked for the Priority tier (serviceTier) or fast mode (additionalModelRequestFields.speed) is estimated at the fast price, marked fast, unless its answer named another tier; one that did not ask at the list', async () => {
    const body = (extra: object) => ({ messages: [{ role: 'user', content: [{ text: PROMPT }] }], inferenceConfig: { maxTokens: 4096 }, ...extra })
    cutBeforeStart()
    expectFast(await post('converse-stream', body({ serviceTier: { type: 'priority' } })))
    cutBeforeStart('default')
    const served = await post('converse-stream', body({ serviceTier: { type: 'priority' } }))
    expect(served).toMatchObject({ estimated: 1, priced: 1, usage_extra: null })
    cutBeforeStart()
    expectFast(await post('converse-stream', body({ additionalModelRequestFields: { anthropic_beta: ['fast-mode-2026-02-01'], speed: 'fast' } })))
    cutBeforeStart()
    const plain = await post('converse-stream', body({}))
    expect(plain).toMatchObject({ estimated: 1, priced: 1, usage_extra: null })
    expect(plain.cost_usd).toBe(standard(plain))
  })

  it("an OpenAI-compatible API stream (…/openai/v1/chat/completions) that asked for the Priority tier (its header, or the body's service_tier) is estimated at the fast price, marked fast, unless its answer's tier header named another; one that did not ask at the list", async () => {
    const chunk = { id: 'chatcmpl-bedrock-cut', object: 'chat.completion.chunk', created: 1, model: OSS, choices: [{ index: 0, delta: { role: 'assistant', content: 'The novel opens in a small harbour town where ' }, finish_reason: null }] }
    const cutAfterText = (tier?: string) => {
      const headers: Record<string, string> = { 'content-type': 'text/event-stream' }
      if (tier) headers['x-amzn-bedrock-service-tier'] = tier
      s.upstream.setResponder(() => ({ status: 200, headers, chunks: [Buffer.from(`data: ${JSON.stringify(chunk)}\n\n`)], resetAfterChunks: 1, delayMs: 1 }))
    }
    const body = (extra: object) => ({ model: OSS, stream: true, max_completion_tokens: 4096, messages: [{ role: 'user', content: PROMPT }], ...extra })
    const url = `${s.t.url}/bedrock/us-east-1/openai/v1/chat/completions`
    const post = (b: unknown, headers: Record<string, string> = {}) => recorded(s.t, () => postJson(url, b, { ...HEADERS, ...headers }).catch(() => undefined))
    const ossFast = (row: any) => (row.input_tokens * OSS_FAST.input_mtok + row.output_tokens * OSS_FAST.output_mtok) / 1e6
    const expectOssFast = (row: any) => {
      expect(row).toMatchObject({ provider: 'bedrock', model: OSS, estimated: 1, priced: 1 })
      expect(row.input_tokens).toBeGreaterThan(1000)
      expect({ cost: row.cost_usd, extra: row.usage_extra }).toEqual({ cost: expect.closeTo(ossFast(row), 12), extra: expect.stringContaining('"fast":true') })
    }
    cutAfterText()
    expectOssFast(await post(body({}), { 'x-amzn-bedrock-service-tier': 'priority' }))
    cutAfterText()
    expectOssFast(await post(body({ service_tier: 'priority' })))
    cutAfterText('priority')
    expectOssFast(await post(body({ service_tier: 'priority' })))
    cutAfterText('default')
    const served = await post(body({ service_tier: 'priority' }))
    expect(served).toMatchObject({ provider: 'bedrock', model: OSS, estimated: 1, priced: 1, usage_extra: null })
    cutAfterText()
    const plain = await post(body({}))
    expect(plain).toMatchObject({ provider: 'bedrock', model: OSS, estimated: 1, priced: 1, usage_extra: null })
    expect(plain.cost_usd).toBe(libraryPrice('aws', { input_tokens: plain.input_tokens, output_tokens: plain.output_tokens }, OSS, plain.ts))
  })

  it('a whole OpenAI-compatible API answer is at the tier its X-Amzn-Bedrock-Service-Tier header names: priority at the fast price, marked fast; none named, at the list', async () => {
    const whole = (tier?: string) => {
      const headers: Record<string, string> = { 'content-type': 'application/json' }
      if (tier) headers['x-amzn-bedrock-service-tier'] = tier
      const answer = { id: 'chatcmpl-bedrock-whole', object: 'chat.completion', created: 1, model: OSS, choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 2_000, completion_tokens: 300, total_tokens: 2_300 } }
      s.upstream.setResponder(() => ({ status: 200, headers, body: Buffer.from(JSON.stringify(answer)) }))
    }
    const url = `${s.t.url}/bedrock/us-east-1/openai/v1/chat/completions`
    const body = { model: OSS, max_completion_tokens: 4096, messages: [{ role: 'user', content: 'hi' }], service_tier: 'priority' }
    whole('priority')
    const served = await recorded(s.t, () => postJson(url, body, HEADERS))
    expect(served).toMatchObject({ provider: 'bedrock', model: OSS, input_tokens: 2_000, output_tokens: 300, estimated: 0, priced: 1 })
    expect({ cost: served.cost_usd, extra: served.usage_extra }).toEqual({ cost: expect.closeTo((2_300 * OSS_FAST.input_mtok) / 1e6, 15), extra: expect.stringContaining('"fast":true') })
    whole()
    const unnamed = await recorded(s.t, () => postJson(url, body, HEADERS))
    expect(unnamed).toMatchObject({ estimated: 0, priced: 1, usage_extra: null })
    expect(unnamed.cost_usd).toBe(libraryPrice('aws', { input_tokens: 2_000, output_tokens: 300 }, OSS, unnamed.ts))
  })
})
