import { beforeEach, describe, expect, it } from 'vitest'
import { bedrockInvokeStream, eventMessage } from '../support/event-stream'
import { fixture } from '../support/fixtures'
import { postJson, request } from '../support/http'
import { serverOverMockUpstream, startTestServer } from '../support/server'
import { answer, libraryPrice, recorded } from './ledger'

/**
 * Amazon Bedrock through a running Burnrate, with a Bedrock API key: InvokeModel of a Claude
 * model (Anthropic's recorded answers, the stream in AWS's event stream encoding) and Converse.
 * `providers.bedrock.base_url` is the mock; the choice of AWS's host by region is tested in
 * src/main/proxy/routes.test.ts.
 */

const s = serverOverMockUpstream()

beforeEach(() => {
  s.upstream.requests.length = 0
})

const HEADERS = { authorization: 'Bearer ABSKQmVkcm9ja0FQSUtleS1idXJucmF0ZS10ZXN0LTAwMDE=' }
const MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'
const BASE = '/bedrock/us-east-1'


describe('Amazon Bedrock', () => {
  it("InvokeModel of a Claude model: the region left out of the path, the key passed on, priced as the path's model", async () => {
    answer(s.upstream, fixture('anthropic/messages-nonstream-cache-read.json'))
    const row = await recorded(s.t, () => postJson(`${s.t.url}${BASE}/model/${MODEL}/invoke`, { anthropic_version: 'bedrock-2023-05-31', max_tokens: 1024, messages: [] }, HEADERS))
    expect(s.upstream.requests[0].url).toBe(`/model/${MODEL}/invoke`)
    expect(s.upstream.requests[0].headers.authorization).toBe(HEADERS.authorization)
    expect(row).toMatchObject({ provider: 'bedrock', endpoint: 'invoke', model: MODEL, status: 200, input_tokens: 1167, cache_read_tokens: 1163, output_tokens: 202, priced: 1, estimated: 0 })
    expect(row.cost_usd).toBe(libraryPrice('aws', { input_tokens: 1167, cache_read_tokens: 1163, output_tokens: 202 }, MODEL, row.ts))
  })

  it('InvokeModelWithResponseStream: the recorded Anthropic stream in event stream chunks, passed byte for byte', async () => {
    const chunks = bedrockInvokeStream(fixture('anthropic/messages-stream-cache-read.sse'))
    // Messages split across the wire's chunks, as TCP may deliver them.
    const wire = Buffer.concat(chunks)
    const parts = [wire.subarray(0, 7), wire.subarray(7, 500), wire.subarray(500, wire.length - 3), wire.subarray(wire.length - 3)]
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': 'req-1' }, chunks: parts, delayMs: 1 }))
    let body: Buffer | undefined
    const row = await recorded(s.t, async () => {
      const res = await request(`${s.t.url}${BASE}/model/${MODEL}/invoke-with-response-stream`, { method: 'POST', headers: { ...HEADERS, 'content-type': 'application/json' }, body: '{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[]}' })
      body = res.body
    })
    expect(body!.equals(wire)).toBe(true)
    expect(row).toMatchObject({ provider: 'bedrock', endpoint: 'invoke', model: MODEL, streamed: 1, input_tokens: 1169, cache_read_tokens: 1165, output_tokens: 221, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBe(libraryPrice('aws', { input_tokens: 1169, cache_read_tokens: 1165, output_tokens: 221 }, MODEL, row.ts))
  })

  it('Converse and ConverseStream: their usage, cache reads added to the input; a global profile at its own price', async () => {
    const global = 'global.anthropic.claude-sonnet-4-5-20250929-v1:0'
    answer(s.upstream, { output: { message: { role: 'assistant', content: [{ text: 'hi' }] } }, stopReason: 'end_turn', usage: { inputTokens: 30, outputTokens: 9, cacheReadInputTokens: 2000, totalTokens: 2039 }, metrics: { latencyMs: 5 } })
    const row = await recorded(s.t, () => postJson(`${s.t.url}${BASE}/model/${global}/converse`, { messages: [] }, HEADERS))
    expect(row).toMatchObject({ endpoint: 'converse', model: global, input_tokens: 2030, cache_read_tokens: 2000, output_tokens: 9, priced: 1 })
    expect(row.cost_usd).toBe(libraryPrice('aws', { input_tokens: 2030, cache_read_tokens: 2000, output_tokens: 9 }, global, row.ts))
    expect(row.cost_usd).not.toBe(libraryPrice('aws', { input_tokens: 2030, cache_read_tokens: 2000, output_tokens: 9 }, MODEL, row.ts))

    const stream = [
      eventMessage('messageStart', { role: 'assistant' }),
      eventMessage('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hello' } }),
      eventMessage('messageStop', { stopReason: 'end_turn' }),
      eventMessage('metadata', { usage: { inputTokens: 40, outputTokens: 2, totalTokens: 42 }, metrics: { latencyMs: 9 } }),
    ]
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/vnd.amazon.eventstream' }, chunks: stream, delayMs: 1 }))
    const streamed = await recorded(s.t, () => postJson(`${s.t.url}${BASE}/model/${MODEL}/converse-stream`, { messages: [] }, HEADERS))
    expect(streamed).toMatchObject({ endpoint: 'converse', streamed: 1, input_tokens: 40, output_tokens: 2, estimated: 0 })
  })

  it("InvokeModel of another model (Llama): not estimated, Bedrock's count in the answer's headers priced at the model's AWS price", async () => {
    const llama = 'meta.llama3-3-70b-instruct-v1:0'
    s.upstream.setResponder(() => ({
      status: 200,
      headers: { 'content-type': 'application/json', 'x-amzn-bedrock-input-token-count': '812', 'x-amzn-bedrock-output-token-count': '96', 'x-amzn-bedrock-invocation-latency': '640' },
      body: JSON.stringify({ generation: 'Here is the answer.', prompt_token_count: 812, generation_token_count: 96, stop_reason: 'stop' }),
    }))
    const row = await recorded(s.t, () => postJson(`${s.t.url}${BASE}/model/${llama}/invoke`, { prompt: 'hi', max_gen_len: 512 }, HEADERS))
    expect(row).toMatchObject({ provider: 'bedrock', endpoint: 'invoke', model: llama, input_tokens: 812, output_tokens: 96, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBe(libraryPrice('aws', { input_tokens: 812, output_tokens: 96 }, llama, row.ts))
  })

  it("InvokeModel of Amazon Nova: its answer's own camelCase usage is not read as Anthropic's (0 tokens); Bedrock's header count is priced", async () => {
    const nova = 'us.amazon.nova-pro-v1:0'
    s.upstream.setResponder(() => ({
      status: 200,
      headers: { 'content-type': 'application/json', 'x-amzn-bedrock-input-token-count': '1200', 'x-amzn-bedrock-output-token-count': '300' },
      body: JSON.stringify({
        output: { message: { role: 'assistant', content: [{ text: 'Hello' }] } },
        stopReason: 'end_turn',
        usage: { inputTokens: 1200, outputTokens: 300, totalTokens: 1500, cacheReadInputTokenCount: 0, cacheWriteInputTokenCount: 0 },
      }),
    }))
    const row = await recorded(s.t, () => postJson(`${s.t.url}${BASE}/model/${nova}/invoke`, { messages: [{ role: 'user', content: [{ text: 'hi' }] }] }, HEADERS))
    expect(row).toMatchObject({ provider: 'bedrock', endpoint: 'invoke', model: nova, input_tokens: 1200, output_tokens: 300, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBe(libraryPrice('aws', { input_tokens: 1200, output_tokens: 300 }, nova, row.ts))
  })

  it("InvokeModel of OpenAI's gpt-oss: its Chat Completions usage is not read as Anthropic's; Bedrock's header count is recorded", async () => {
    const oss = 'openai.gpt-oss-120b-1:0'
    s.upstream.setResponder(() => ({
      status: 200,
      headers: { 'content-type': 'application/json', 'x-amzn-bedrock-input-token-count': '800', 'x-amzn-bedrock-output-token-count': '200' },
      body: JSON.stringify({
        id: 'chatcmpl-1',
        object: 'chat.completion',
        model: oss,
        choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 800, completion_tokens: 200, total_tokens: 1000 },
      }),
    }))
    const row = await recorded(s.t, () => postJson(`${s.t.url}${BASE}/model/${oss}/invoke`, { messages: [{ role: 'user', content: 'hi' }] }, HEADERS))
    expect(row).toMatchObject({ provider: 'bedrock', model: oss, input_tokens: 800, output_tokens: 200, estimated: 0 })
  })

  it("InvokeModelWithResponseStream of Nova: Bedrock's invocation metrics priced, their cache reads and writes added to the input", async () => {
    const nova = 'us.amazon.nova-pro-v1:0'
    const chunk = (ev: object) => eventMessage('chunk', { bytes: Buffer.from(JSON.stringify(ev)).toString('base64') })
    const metrics = { inputTokenCount: 100, outputTokenCount: 50, cacheReadInputTokenCount: 2000, cacheWriteInputTokenCount: 300, invocationLatency: 300, firstByteLatency: 100 }
    const stream = [
      chunk({ messageStart: { role: 'assistant' } }),
      chunk({ contentBlockDelta: { delta: { text: 'Hello' }, contentBlockIndex: 0 } }),
      chunk({ messageStop: { stopReason: 'end_turn' } }),
      chunk({ metadata: { usage: { inputTokens: 100, outputTokens: 50, cacheReadInputTokenCount: 2000, cacheWriteInputTokenCount: 300 } }, 'amazon-bedrock-invocationMetrics': metrics }),
    ]
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/vnd.amazon.eventstream' }, chunks: stream, delayMs: 1 }))
    const row = await recorded(s.t, () => postJson(`${s.t.url}${BASE}/model/${nova}/invoke-with-response-stream`, { messages: [] }, HEADERS))
    expect(row).toMatchObject({ model: nova, streamed: 1, input_tokens: 2400, cache_read_tokens: 2000, cache_write_tokens: 300, output_tokens: 50, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBe(libraryPrice('aws', { input_tokens: 2400, cache_read_tokens: 2000, cache_write_tokens: 300, output_tokens: 50 }, nova, row.ts))
  })

  it("InvokeModel of Claude through an application inference profile (an ARN naming no model): its Anthropic usage is read, priced as the model the answer names", async () => {
    const arn = encodeURIComponent('arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6')
    answer(s.upstream, fixture('anthropic/messages-nonstream-cache-read.json'))
    const row = await recorded(s.t, () => postJson(`${s.t.url}${BASE}/model/${arn}/invoke`, { anthropic_version: 'bedrock-2023-05-31', max_tokens: 1024, messages: [] }, HEADERS))
    const usage = { input_tokens: 1167, cache_read_tokens: 1163, output_tokens: 202 }
    expect(row).toMatchObject({ ...usage, estimated: 0, model: 'claude-3-5-sonnet-20240620', priced: 1 })
    expect(row.cost_usd).toBe(libraryPrice('aws', usage, 'claude-3-5-sonnet-20240620', row.ts))
  })

  it('an application inference profile mapped in providers.bedrock.profiles (by ARN or id) is priced as its model, Converse too', async () => {
    const arn = 'arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/prof0001'
    const t2 = await startTestServer({ providers: { bedrock: { base_url: s.upstream.url, profiles: { [arn]: MODEL, prof0002: 'us.amazon.nova-pro-v1:0' } } } })
    try {
      answer(s.upstream, { output: { message: { role: 'assistant', content: [{ text: 'hi' }] } }, stopReason: 'end_turn', usage: { inputTokens: 100, outputTokens: 20, totalTokens: 120 } })
      const row = await recorded(t2, () => postJson(`${t2.url}${BASE}/model/${encodeURIComponent(arn)}/converse`, { messages: [] }, HEADERS))
      expect(row).toMatchObject({ model: MODEL, input_tokens: 100, output_tokens: 20, priced: 1 })
      expect(row.cost_usd).toBe(libraryPrice('aws', { input_tokens: 100, output_tokens: 20 }, MODEL, row.ts))
      const byId = await recorded(t2, () => postJson(`${t2.url}${BASE}/model/${encodeURIComponent(arn.replace('prof0001', 'prof0002'))}/converse`, { messages: [] }, HEADERS))
      expect(byId).toMatchObject({ model: 'us.amazon.nova-pro-v1:0', priced: 1 })
      // An unmapped one's Converse answer names no model: the call is kept, unpriced, under the profile's id.
      const unmapped = await recorded(t2, () => postJson(`${t2.url}${BASE}/model/${encodeURIComponent(arn.replace('prof0001', 'prof0003'))}/converse`, { messages: [] }, HEADERS))
      expect(unmapped).toMatchObject({ model: 'prof0003', input_tokens: 100, output_tokens: 20, priced: 0 })
    } finally {
      await t2.cleanup()
    }
  })

  it('1-hour cache writes cost 2x input, as Anthropic bills them on Bedrock too (the AWS price data has no such rate for this model)', async () => {
    answer(s.upstream, {
      output: { message: { role: 'assistant', content: [{ text: 'hi' }] } },
      stopReason: 'end_turn',
      usage: { inputTokens: 100, outputTokens: 20, cacheWriteInputTokens: 3000, cacheDetails: [{ ttl: '1h', inputTokens: 2000 }, { ttl: '5m', inputTokens: 1000 }], totalTokens: 3120 },
    })
    const row = await recorded(s.t, () => postJson(`${s.t.url}${BASE}/model/${MODEL}/converse`, { messages: [] }, HEADERS))
    expect(row).toMatchObject({ input_tokens: 3100, cache_write_tokens: 3000, cache_write_1h_tokens: 2000, output_tokens: 20, priced: 1 })
    // Sonnet 4.5 through a US profile: $3.30 input, $4.125 a 5-minute write, $6.60 a 1-hour write (2x input), $16.50 output.
    expect(row.cost_usd).toBeCloseTo((100 * 3.3 + 1000 * 4.125 + 2000 * 6.6 + 20 * 16.5) / 1e6, 15)
    const atFiveMinuteRate = libraryPrice('aws', { input_tokens: 3100, cache_write_tokens: 3000, cache_write_1h_tokens: 2000, output_tokens: 20 }, MODEL, row.ts)
    expect(row.cost_usd - atFiveMinuteRate).toBeCloseTo((2000 * (6.6 - 4.125)) / 1e6, 15)
  })

  it("the OpenAI-compatible Chat Completions API (/openai/v1/chat/completions, gpt-oss with a Bedrock API key) is metered at the model's AWS price", async () => {
    // docs.aws.amazon.com/bedrock/latest/userguide/inference-chat-completions.html: OpenAI(base_url="https://bedrock-runtime.us-west-2.amazonaws.com/openai/v1",
    // api_key=$AWS_BEARER_TOKEN_BEDROCK).chat.completions.create(model="openai.gpt-oss-20b-1:0", …), answered in OpenAI's format.
    answer(s.upstream, {
      id: 'chatcmpl-bedrock-1',
      object: 'chat.completion',
      created: 1764970000,
      model: 'openai.gpt-oss-20b-1:0',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hi.' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 2_000, completion_tokens: 500, total_tokens: 2_500 },
    })
    const row = await recorded(s.t, () => postJson(`${s.t.url}/bedrock/us-west-2/openai/v1/chat/completions`, { model: 'openai.gpt-oss-20b-1:0', messages: [{ role: 'user', content: 'hi' }] }, HEADERS))
    expect(s.upstream.requests[0].url).toBe('/openai/v1/chat/completions')
    expect(row).toMatchObject({ provider: 'bedrock', endpoint: 'chat.completions', model: 'openai.gpt-oss-20b-1:0', input_tokens: 2_000, output_tokens: 500, priced: 1 })
    // gpt-oss-20b on Bedrock (the price data's aws table): $0.07 per 1M input tokens, $0.30 per 1M output tokens.
    expect(row.cost_usd).toBeCloseTo((2_000 * 0.07 + 500 * 0.3) / 1e6, 15)
  })

  it("the control plane's reads pass at no cost", async () => {
    answer(s.upstream, { inferenceProfileSummaries: [] })
    const row = await recorded(s.t, () => request(`${s.t.url}${BASE}/inference-profiles?type=SYSTEM_DEFINED`, { headers: HEADERS }))
    expect(s.upstream.requests[0].url).toBe('/inference-profiles?type=SYSTEM_DEFINED')
    expect(row).toMatchObject({ provider: 'bedrock', endpoint: 'other', cost_usd: 0 })
  })

  it('an address without a region, with no base URL configured: a 404 that says what to do', async () => {
    const t2 = await startTestServer({})
    try {
      const res = await postJson(`${t2.url}/bedrock/model/${MODEL}/invoke`, { messages: [] }, HEADERS)
      expect(res.status).toBe(404)
      expect(res.json().error.message).toContain('/bedrock/us-east-1')
    } finally {
      await t2.cleanup()
    }
  })
})
