import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { bedrockInvokeStream, eventMessage } from '../../../test/support/event-stream'
import { EventStreamReader } from '../metering/event-stream'
import { bedrock } from './bedrock'
import { converseUsage } from './bedrock-converse'
import { bedrockPlace, inspectBedrock } from './bedrock-paths'
import type { RequestInfo } from './types'

const FIXTURES = join(__dirname, '../../../test/fixtures')
const req = (path: string, method = 'POST'): RequestInfo => ({ method, path, query: '', headers: {}, body: {} })
const MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'

function feed(meter: ReturnType<typeof bedrock.meter>, chunks: Buffer[]): void {
  const r = new EventStreamReader((t, p) => meter.event(t, p))
  for (const c of chunks) r.write(c)
}

describe('Bedrock addresses', () => {
  it('the region in the address picks the host; the runtime API and the control plane have their own', () => {
    expect(bedrockPlace(`/us-east-1/model/${MODEL}/invoke`)).toEqual({ path: `/model/${MODEL}/invoke`, baseUrl: 'https://bedrock-runtime.us-east-1.amazonaws.com' })
    expect(bedrockPlace('/eu-central-1/inference-profiles')).toEqual({ path: '/inference-profiles', baseUrl: 'https://bedrock.eu-central-1.amazonaws.com' })
    expect(bedrockPlace('/us-gov-west-1/foundation-models')?.baseUrl).toBe('https://bedrock.us-gov-west-1.amazonaws.com')
    expect(bedrockPlace('/ap-northeast-2')).toEqual({ path: '/', baseUrl: 'https://bedrock.ap-northeast-2.amazonaws.com' })
    for (const p of [`/model/${MODEL}/invoke`, '/evil.example/model/x/invoke', '/us-east-1.evil.example/model/x/invoke', '/US-EAST-1/model', '/us/model', '/']) expect(bedrockPlace(p), p).toBeNull()
  })

  it('model calls: invoke and converse, streamed or not, by the model id or the id an ARN ends in', () => {
    expect(inspectBedrock(req(`/model/${MODEL}/invoke`))).toEqual({ endpoint: 'invoke', model: MODEL, stream: false, billable: true })
    expect(inspectBedrock(req(`/model/${encodeURIComponent(MODEL)}/invoke-with-response-stream`))).toEqual({ endpoint: 'invoke', model: MODEL, stream: true, billable: true })
    expect(inspectBedrock(req(`/model/${MODEL}/converse-stream`))).toMatchObject({ endpoint: 'converse', stream: true, billable: true })
    const arn = encodeURIComponent(`arn:aws:bedrock:us-east-1:123456789012:inference-profile/${MODEL}`)
    expect(inspectBedrock(req(`/model/${arn}/converse`)).model).toBe(MODEL)
    expect(inspectBedrock(req(`/model/${MODEL}/count-tokens`))).toMatchObject({ endpoint: 'count_tokens', billable: false })
    expect(inspectBedrock(req('/inference-profiles', 'GET'))).toEqual({ endpoint: 'other', model: '', stream: false, billable: false })
  })
})

describe('Bedrock meters', () => {
  it("InvokeModel's stream: Anthropic's events inside the chunks, priced as the path's model", () => {
    const m = bedrock.meter(inspectBedrock(req(`/model/${MODEL}/invoke-with-response-stream`)), req(''))
    feed(m, bedrockInvokeStream(readFileSync(join(FIXTURES, 'anthropic/messages-stream-cache-read.sse'))))
    const r = m.result()
    expect(r.usage).toMatchObject({ input_tokens: 1169, cache_read_tokens: 1165, output_tokens: 221 })
    expect(r.complete).toBe(true)
    expect(r.model).toBeUndefined()
  })

  it("InvokeModel's stream of another model: Bedrock's own count in the last event", () => {
    const m = bedrock.meter(inspectBedrock(req('/model/meta.llama3-70b-instruct-v1:0/invoke-with-response-stream')), req(''))
    const chunk = (ev: object) => eventMessage('chunk', { bytes: Buffer.from(JSON.stringify(ev)).toString('base64') })
    feed(m, [
      chunk({ generation: 'Hello', prompt_token_count: 12, generation_token_count: 1, stop_reason: null }),
      chunk({ generation: '!', prompt_token_count: null, generation_token_count: 2, stop_reason: 'stop', 'amazon-bedrock-invocationMetrics': { inputTokenCount: 12, outputTokenCount: 2, invocationLatency: 300, firstByteLatency: 100 } }),
    ])
    expect(m.result()).toMatchObject({ usage: { input_tokens: 12, output_tokens: 2, cache_read_tokens: 0 }, complete: true })
  })

  it("InvokeModel's answer: Anthropic's JSON", () => {
    const m = bedrock.meter(inspectBedrock(req(`/model/${MODEL}/invoke`)), req(''))
    m.json(JSON.parse(readFileSync(join(FIXTURES, 'anthropic/messages-nonstream-cache-read.json'), 'utf8')))
    expect(m.result()).toMatchObject({ usage: { input_tokens: 1167, cache_read_tokens: 1163, output_tokens: 202 }, complete: true })
  })

  it("InvokeModel's JSON answer of another model: Bedrock's own count in the headers, cache reads and writes added to the input", () => {
    const m = bedrock.meter(inspectBedrock(req('/model/meta.llama3-70b-instruct-v1:0/invoke')), req(''))
    m.headers!({ 'x-amzn-bedrock-input-token-count': '120', 'x-amzn-bedrock-output-token-count': '45', 'x-amzn-bedrock-cache-read-input-token-count': '30', 'content-type': 'application/json' })
    m.json({ generation: 'Hello', prompt_token_count: 150, generation_token_count: 45, stop_reason: 'stop' })
    expect(m.result()).toMatchObject({ usage: { input_tokens: 150, cache_read_tokens: 30, cache_write_tokens: 0, output_tokens: 45 }, complete: true })
    // No count in the headers: no usage (the call is then estimated).
    const bare = bedrock.meter(inspectBedrock(req('/model/meta.llama3-70b-instruct-v1:0/invoke')), req(''))
    bare.headers!({ 'content-type': 'application/json', 'x-amzn-bedrock-output-token-count': 'x' })
    bare.json({ generation: 'Hello' })
    expect(bare.result().usage).toBeNull()
  })

  it("InvokeModel's JSON answer of a Claude model: its own usage wins over the headers' count", () => {
    const m = bedrock.meter(inspectBedrock(req(`/model/${MODEL}/invoke`)), req(''))
    m.headers!({ 'x-amzn-bedrock-input-token-count': '10', 'x-amzn-bedrock-output-token-count': '5', 'x-amzn-bedrock-cache-write-input-token-count': '300' })
    m.json({ type: 'message', usage: { input_tokens: 10, cache_creation_input_tokens: 300, cache_creation: { ephemeral_1h_input_tokens: 300 }, output_tokens: 5 } })
    expect(m.result().usage).toMatchObject({ input_tokens: 310, cache_write_tokens: 300, cache_write_1h_tokens: 300, output_tokens: 5 })
  })

  it('Converse: the usage with cache reads and writes added to the input, from the answer or the stream', () => {
    expect(converseUsage({ inputTokens: 10, outputTokens: 5, cacheReadInputTokens: 100, cacheWriteInputTokens: 20, totalTokens: 135 })).toMatchObject({ input_tokens: 130, cache_read_tokens: 100, cache_write_tokens: 20, cache_write_1h_tokens: 0, output_tokens: 5 })
    // Cache writes by TTL: the 1-hour ones are billed higher.
    const ttl = converseUsage({ inputTokens: 10, outputTokens: 5, cacheWriteInputTokens: 300, cacheDetails: [{ ttl: '1h', inputTokens: 200 }, { ttl: '5m', inputTokens: 100 }] })
    expect(ttl).toMatchObject({ input_tokens: 310, cache_write_tokens: 300, cache_write_1h_tokens: 200 })
    const shape = inspectBedrock(req(`/model/${MODEL}/converse`))
    const json = bedrock.meter(shape, req(''))
    json.json({ output: { message: { role: 'assistant', content: [{ text: 'hi' }] } }, stopReason: 'end_turn', usage: { inputTokens: 7, outputTokens: 3, totalTokens: 10 } })
    expect(json.result()).toMatchObject({ usage: { input_tokens: 7, output_tokens: 3 }, complete: true })

    const stream = bedrock.meter(inspectBedrock(req(`/model/${MODEL}/converse-stream`)), req(''))
    feed(stream, [
      eventMessage('messageStart', { role: 'assistant' }),
      eventMessage('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hello' } }),
      eventMessage('contentBlockStop', { contentBlockIndex: 0 }),
      eventMessage('messageStop', { stopReason: 'end_turn' }),
      eventMessage('metadata', { usage: { inputTokens: 12, outputTokens: 2, cacheReadInputTokens: 4, totalTokens: 18 }, metrics: { latencyMs: 100 } }),
    ])
    expect(stream.result()).toMatchObject({ usage: { input_tokens: 16, cache_read_tokens: 4, output_tokens: 2 }, complete: true })
  })

  it('a Converse stream cut before its usage keeps the text it streamed, for the estimate', () => {
    const m = bedrock.meter(inspectBedrock(req(`/model/${MODEL}/converse-stream`)), req(''))
    feed(m, [eventMessage('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hello ' } }), eventMessage('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'there' } })])
    expect(m.result()).toMatchObject({ usage: null, complete: false, outputText: 'Hello there' })
  })
})
