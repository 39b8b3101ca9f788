import { beforeEach, describe, expect, it } from 'vitest'
import { bedrockInvokeStream, eventMessage } from '../support/event-stream'
import { anthropicStream } from '../support/fixtures'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { libraryPrice, recorded } from './ledger'

/**
 * Amazon Bedrock's service tiers through a running Burnrate: a call its Priority tier served
 * (Claude Code's `ANTHROPIC_BEDROCK_SERVICE_TIER=priority`, sent as `X-Amzn-Bedrock-Service-Tier`)
 * costs more than the standard tier, by model. The answer says which tier served it: InvokeModel in
 * its `X-Amzn-Bedrock-Service-Tier` header, Converse in its `serviceTier` (the answer's, a stream's
 * `metadata` event's). The price data has no Priority prices, so such a call is priced at a
 * `speed: fast` override when one is set; before, it was priced at the standard list whatever was
 * set, as if the standard tier had served it.
 */

const MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'
// Made-up Priority prices for the test: what a user copies from Bedrock's pricing page.
const PRIORITY = { model: MODEL, speed: 'fast', input_mtok: 5.775, output_mtok: 28.875, cache_read_mtok: 0.5775, cache_write_mtok: 7.21875 }
const s = serverOverMockUpstream({ pricing: { overrides: [PRIORITY] } })

const BASE = '/bedrock/us-east-1'
const HEADERS = { authorization: 'Bearer ABSKQmVkcm9ja0FQSUtleS1zZXJ2aWNlLXRpZXItMDAwMQ==' }
const priority = (input: number, output: number) => (input * PRIORITY.input_mtok + output * PRIORITY.output_mtok) / 1e6

function claudeAnswer(tierHeader: string | undefined): void {
  const body = Buffer.from(JSON.stringify({
    id: 'msg_bdrk_tier', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929',
    content: [{ type: 'text', text: 'Done.' }], stop_reason: 'end_turn', stop_sequence: null,
    usage: { input_tokens: 12_000, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 800 },
  }))
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-amzn-bedrock-input-token-count': '12000', 'x-amzn-bedrock-output-token-count': '800' }
  if (tierHeader) headers['x-amzn-bedrock-service-tier'] = tierHeader
  s.upstream.setResponder(() => ({ status: 200, headers, body }))
}

beforeEach(() => {
  s.upstream.requests.length = 0
})

describe("Amazon Bedrock's Priority tier", () => {
  it('InvokeModel served by the Priority tier (its answer header): priced at the speed: fast override', async () => {
    claudeAnswer('priority')
    const row = await recorded(s.t, () => postJson(`${s.t.url}${BASE}/model/${MODEL}/invoke`, { anthropic_version: 'bedrock-2023-05-31', max_tokens: 1024, messages: [] }, { ...HEADERS, 'x-amzn-bedrock-service-tier': 'priority' }))
    expect(s.upstream.requests[0].headers['x-amzn-bedrock-service-tier']).toBe('priority')
    expect(row).toMatchObject({ provider: 'bedrock', model: MODEL, input_tokens: 12_000, output_tokens: 800, priced: 1, estimated: 0 })
    expect(JSON.parse(row.usage_extra)).toMatchObject({ fast: true })
    expect(row.cost_usd).toBeCloseTo(priority(12_000, 800), 15)
  })

  it('InvokeModelWithResponseStream served by the Priority tier (its answer header): the override', async () => {
    const sse = anthropicStream({ id: 'msg_bdrk_tier_stream', model: 'claude-sonnet-4-5-20250929', usage: { input_tokens: 9_000, output_tokens: 1 } }, 600, 'Streamed.')
    const chunks = bedrockInvokeStream(Buffer.from(sse))
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-bedrock-service-tier': 'priority' }, chunks, delayMs: 1 }))
    const row = await recorded(s.t, () => postJson(`${s.t.url}${BASE}/model/${MODEL}/invoke-with-response-stream`, { anthropic_version: 'bedrock-2023-05-31', max_tokens: 1024, messages: [] }, { ...HEADERS, 'x-amzn-bedrock-service-tier': 'priority' }))
    expect(row).toMatchObject({ streamed: 1, input_tokens: 9_000, output_tokens: 600, priced: 1, estimated: 0 })
    expect(row.cost_usd).toBeCloseTo(priority(9_000, 600), 15)
  })

  it('InvokeModel the standard tier served (asked for priority, answered default): the list price', async () => {
    claudeAnswer('default')
    const row = await recorded(s.t, () => postJson(`${s.t.url}${BASE}/model/${MODEL}/invoke`, { anthropic_version: 'bedrock-2023-05-31', max_tokens: 1024, messages: [] }, { ...HEADERS, 'x-amzn-bedrock-service-tier': 'priority' }))
    expect(row.usage_extra).toBeNull()
    expect(row.cost_usd).toBe(libraryPrice('aws', { input_tokens: 12_000, output_tokens: 800 }, MODEL, row.ts))
  })

  it('a Claude InvokeModel whose answer says fast mode served it (usage.speed: "fast"): priced at the speed: fast override; one answered at standard speed at the list', async () => {
    const answerAt = (speed: string) => s.upstream.setResponder(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify({ id: 'msg_bdrk_fast', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [{ type: 'text', text: 'Done.' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 2_000, output_tokens: 300, speed } })),
    }))
    const body = { anthropic_version: 'bedrock-2023-05-31', anthropic_beta: ['fast-mode-2026-02-01'], speed: 'fast', max_tokens: 1024, messages: [] }
    answerAt('fast')
    const fast = await recorded(s.t, () => postJson(`${s.t.url}${BASE}/model/${MODEL}/invoke`, body, HEADERS))
    expect(JSON.parse(s.upstream.requests[0].body.toString())).toMatchObject({ speed: 'fast' })
    expect(JSON.parse(fast.usage_extra)).toMatchObject({ fast: true })
    expect(fast.cost_usd).toBeCloseTo(priority(2_000, 300), 15)
    answerAt('standard')
    const standard = await recorded(s.t, () => postJson(`${s.t.url}${BASE}/model/${MODEL}/invoke`, body, HEADERS))
    expect(standard.cost_usd).toBe(libraryPrice('aws', { input_tokens: 2_000, output_tokens: 300 }, MODEL, standard.ts))
  })

  it('Converse and ConverseStream served by the Priority tier (serviceTier in the answer, in the metadata event): the override', async () => {
    s.upstream.setResponder(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify({ output: { message: { role: 'assistant', content: [{ text: 'hi' }] } }, stopReason: 'end_turn', usage: { inputTokens: 3_000, outputTokens: 90, totalTokens: 3_090 }, metrics: { latencyMs: 410 }, serviceTier: { type: 'priority' } })),
    }))
    const row = await recorded(s.t, () => postJson(`${s.t.url}${BASE}/model/${MODEL}/converse`, { messages: [], serviceTier: { type: 'priority' } }, HEADERS))
    expect(row).toMatchObject({ endpoint: 'converse', input_tokens: 3_000, output_tokens: 90, priced: 1 })
    expect(row.cost_usd).toBeCloseTo(priority(3_000, 90), 15)

    const stream = [
      eventMessage('messageStart', { role: 'assistant' }),
      eventMessage('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hello' } }),
      eventMessage('messageStop', { stopReason: 'end_turn' }),
      eventMessage('metadata', { usage: { inputTokens: 4_000, outputTokens: 120, totalTokens: 4_120 }, metrics: { latencyMs: 900 }, serviceTier: { type: 'priority' } }),
    ]
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/vnd.amazon.eventstream' }, chunks: stream, delayMs: 1 }))
    const streamed = await recorded(s.t, () => postJson(`${s.t.url}${BASE}/model/${MODEL}/converse-stream`, { messages: [], serviceTier: { type: 'priority' } }, HEADERS))
    expect(streamed).toMatchObject({ endpoint: 'converse', streamed: 1, input_tokens: 4_000, output_tokens: 120, estimated: 0 })
    expect(streamed.cost_usd).toBeCloseTo(priority(4_000, 120), 15)
  })
})
