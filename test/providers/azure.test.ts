import { calcPrice } from '@pydantic/genai-prices'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { answer, recorded } from './ledger'

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer({ providers: { azure: { deployments: { 'prod-chat': 'gpt-4o', 'embed-small': 'text-embedding-3-small', 'gpt-4': 'gpt-4o' } } } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})
beforeEach(() => {
  upstream.requests.length = 0
})

const HEADERS = { 'api-key': 'azure-test-key-0000000000001' }

function azurePrice(usage: Record<string, number>, model: string, ts: number): number {
  const p = calcPrice(usage, model, { providerId: 'azure', timestamp: new Date(ts) })
  expect(p).not.toBeNull()
  return p!.total_price
}

describe('Azure OpenAI', () => {
  it('forwards the deployment path and api-version, and prices the model the response names', async () => {
    answer(upstream, fixture('openai-chat/chat-nonstream-cached.json'))
    const row = await recorded(t, () =>
      postJson(`${t.url}/azure/openai/deployments/prod-chat/chat/completions?api-version=2024-10-21`, { messages: [{ role: 'user', content: 'hi' }] }, HEADERS),
    )
    expect(upstream.requests[0].url).toBe('/openai/deployments/prod-chat/chat/completions?api-version=2024-10-21')
    expect(upstream.requests[0].headers['api-key']).toBe(HEADERS['api-key'])
    // The response's model (a dated snapshot) is more precise than the deployment mapping.
    expect(row).toMatchObject({ provider: 'azure', model: 'gpt-4o-mini-2024-07-18', endpoint: 'chat.completions', input_tokens: 1149, cache_read_tokens: 1024, output_tokens: 353, key_hint: 'azu…0001' })
    expect(row.cost_usd).toBe(azurePrice({ input_tokens: 1149, cache_read_tokens: 1024, output_tokens: 353 }, 'gpt-4o-mini-2024-07-18', row.ts))
  })

  it('meters the recorded Azure stream (prompt_filter_results chunk with an empty model first)', async () => {
    answer(upstream, fixture('openai-chat/azure-chat-stream-with-usage-reasoning.sse'), 'sse')
    const row = await recorded(t, () =>
      postJson(`${t.url}/azure/openai/deployments/model-router/chat/completions?api-version=2025-01-01-preview`, { stream: true, stream_options: { include_usage: true }, messages: [] }, HEADERS),
    )
    expect(row).toMatchObject({ model: 'gpt-5-nano-2025-08-07', streamed: 1, input_tokens: 15, output_tokens: 78, reasoning_tokens: 64, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBe(azurePrice({ input_tokens: 15, output_tokens: 78 }, 'gpt-5-nano-2025-08-07', row.ts))
  })

  it('maps a deployment to its configured model when the response names none', async () => {
    answer(upstream, { object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.1, -0.2] }], usage: { prompt_tokens: 9, total_tokens: 9 } })
    const row = await recorded(t, () =>
      postJson(`${t.url}/azure/openai/deployments/embed-small/embeddings?api-version=2024-10-21`, { input: 'hello world' }, HEADERS),
    )
    expect(row).toMatchObject({ model: 'text-embedding-3-small', endpoint: 'embeddings', input_tokens: 9, output_tokens: 0, priced: 1 })
    expect(row.cost_usd).toBe(azurePrice({ input_tokens: 9, output_tokens: 0 }, 'text-embedding-3-small', row.ts))
  })

  it('the v1 API: the body names the deployment', async () => {
    answer(upstream, { ...JSON.parse(fixture('openai-chat/chat-nonstream-reasoning.json').toString()), model: undefined })
    const row = await recorded(t, () => postJson(`${t.url}/azure/openai/v1/chat/completions`, { model: 'prod-chat', messages: [] }, HEADERS))
    expect(upstream.requests[0].url).toBe('/openai/v1/chat/completions')
    expect(row).toMatchObject({ model: 'gpt-4o', endpoint: 'chat.completions', input_tokens: 11, output_tokens: 228 })
    expect(row.cost_usd).toBe(azurePrice({ input_tokens: 11, output_tokens: 228 }, 'gpt-4o', row.ts))
  })

  it("the Responses API, whose answer names the deployment instead of the model: priced as the deployment's configured model", async () => {
    // Azure's Responses API echoes the deployment name as `model` (learn.microsoft.com/en-us/answers/a/12486506:
    // deployment gpt-5-01 of gpt-5 answers `response.model = "gpt-5-01"`, where Chat Completions answers "gpt-5-2025-08-07").
    const body = { ...JSON.parse(fixture('openai-responses/responses-nonstream-reasoning.json').toString()), model: 'prod-chat' }
    answer(upstream, body)
    const row = await recorded(t, () => postJson(`${t.url}/azure/openai/v1/responses`, { model: 'prod-chat', input: 'hi' }, HEADERS))
    expect(row).toMatchObject({ model: 'gpt-4o', endpoint: 'responses', input_tokens: 11, output_tokens: 327, priced: 1 })
    // gpt-4o (the price data's openai table, Azure's fallback): $2.50 per 1M input tokens, $10 per 1M output tokens.
    expect(row.cost_usd).toBeCloseTo((11 * 2.5 + 327 * 10) / 1e6, 15)
  })

  it("an answer naming the model of another deployment is priced as that model, not as the deployment mapped under that name", async () => {
    // A deployment named gpt-4 that was moved to gpt-4o (deployments: {gpt-4: gpt-4o}), beside one
    // that still runs GPT-4 (0613), whose Chat Completions answers name the model "gpt-4" as Azure
    // names its older models (gpt-35-turbo, gpt-4): the call ran GPT-4 and is billed as GPT-4.
    answer(upstream, {
      id: 'chatcmpl-legacy-1',
      object: 'chat.completion',
      created: 1764970000,
      model: 'gpt-4',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello!' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 1_000, completion_tokens: 200, total_tokens: 1_200 },
    })
    const row = await recorded(t, () =>
      postJson(`${t.url}/azure/openai/deployments/legacy-gpt4/chat/completions?api-version=2024-10-21`, { messages: [{ role: 'user', content: 'hi' }] }, HEADERS),
    )
    expect(row).toMatchObject({ provider: 'azure', model: 'gpt-4', endpoint: 'chat.completions', input_tokens: 1_000, output_tokens: 200, priced: 1 })
    expect(row.cost_usd).toBe(azurePrice({ input_tokens: 1_000, output_tokens: 200 }, 'gpt-4', row.ts))
  })

  it('a streamed Responses answer naming the deployment is priced as its configured model too', async () => {
    const sse = fixture('openai-responses/responses-stream-basic.sse').toString().replace(/"model":"[^"]*"/g, '"model":"prod-chat"')
    answer(upstream, sse, 'sse')
    const row = await recorded(t, () => postJson(`${t.url}/azure/openai/v1/responses`, { model: 'prod-chat', input: 'hi', stream: true }, HEADERS))
    expect(row).toMatchObject({ model: 'gpt-4o', endpoint: 'responses', streamed: 1, input_tokens: 278, output_tokens: 9, priced: 1 })
    expect(row.cost_usd).toBeCloseTo((278 * 2.5 + 9 * 10) / 1e6, 15)
  })

  it("the Foundry model inference API (/models/chat/completions, the body naming the deployment) is metered and priced", async () => {
    // learn.microsoft.com/azure/ai-foundry/model-inference/how-to/inference: endpoint https://<resource>.services.ai.azure.com/models,
    // the request's `model` the deployment's name; the Azure AI Inference SDKs post {endpoint}/chat/completions?api-version=….
    answer(upstream, {
      id: 'foundry-1',
      object: 'chat.completion',
      created: 1764970000,
      model: 'phi-4',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hi.' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 1_000, completion_tokens: 200, total_tokens: 1_200 },
    })
    const row = await recorded(t, () => postJson(`${t.url}/azure/models/chat/completions?api-version=2024-05-01-preview`, { model: 'Phi-4', messages: [{ role: 'user', content: 'hi' }] }, HEADERS))
    expect(upstream.requests[0].url).toBe('/models/chat/completions?api-version=2024-05-01-preview')
    expect(row).toMatchObject({ provider: 'azure', endpoint: 'chat.completions', model: 'phi-4', input_tokens: 1_000, output_tokens: 200, priced: 1 })
    // Phi-4 (the price data's azure table): $0.07 per 1M input tokens, $0.14 per 1M output tokens.
    expect(row.cost_usd).toBeCloseTo((1_000 * 0.07 + 200 * 0.14) / 1e6, 15)
  })

  it('without a configured base URL answers a 404 that says what to set', async () => {
    const t2 = await startTestServer({})
    try {
      const res = await postJson(`${t2.url}/azure/openai/deployments/x/chat/completions?api-version=2024-10-21`, { messages: [] }, HEADERS)
      expect(res.status).toBe(404)
      expect(res.json().error.type).toBe('not_found')
      expect(res.json().error.message).toContain('providers.azure.base_url')
    } finally {
      await t2.cleanup()
    }
  })
})
