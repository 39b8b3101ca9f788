import { calcPrice } from '@pydantic/genai-prices'
import { beforeEach, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { serverOverMockUpstream, startTestServer } from '../support/server'
import { answer, libraryPrice, recorded } from './ledger'

/**
 * Vertex AI through a running Burnrate: Claude (Anthropic's Messages API behind `:rawPredict` and
 * `:streamRawPredict`) and Gemini (`:generateContent`, `:streamGenerateContent`), with the
 * recorded Anthropic and Gemini answers. `providers.vertex.base_url` is the mock; the choice of
 * Google's host by location is tested in src/main/proxy/routes.test.ts.
 */

const s = serverOverMockUpstream()

beforeEach(() => {
  s.upstream.requests.length = 0
})

/** A Google access token, as Claude Code gets it from Application Default Credentials. */
const HEADERS = { authorization: 'Bearer ya29.a0-burnrate-vertex-test-token-0001' }
const CLAUDE = '/v1/projects/my-proj/locations/us-east5/publishers/anthropic/models'
const GEMINI = '/v1/projects/my-proj/locations/global/publishers/google/models'


describe('Vertex AI', () => {
  it('Claude with rawPredict: the path and token pass as they came, the answer is metered as Anthropic and priced at its list', async () => {
    answer(s.upstream, fixture('anthropic/messages-nonstream-cache-read.json'))
    const path = `${CLAUDE}/claude-3-5-sonnet@20240620:rawPredict`
    const row = await recorded(s.t, () => postJson(`${s.t.url}/vertex${path}`, { anthropic_version: 'vertex-2023-10-16', max_tokens: 1024, messages: [{ role: 'user', content: 'hi' }] }, HEADERS))
    expect(s.upstream.requests[0].url).toBe(path)
    expect(s.upstream.requests[0].headers.authorization).toBe(HEADERS.authorization)
    expect(row).toMatchObject({ provider: 'vertex', endpoint: 'messages', model: 'claude-3-5-sonnet-20240620', requested_model: 'claude-3-5-sonnet@20240620', status: 200 })
    expect(row).toMatchObject({ input_tokens: 1167, cache_read_tokens: 1163, output_tokens: 202, priced: 1, estimated: 0 })
    expect(row.cost_usd).toBe(libraryPrice('google', { input_tokens: 1167, cache_read_tokens: 1163, output_tokens: 202 }, 'claude-3-5-sonnet-20240620', row.ts))
    expect(row.cost_usd).toBe(calcPrice({ input_tokens: 1167, cache_read_tokens: 1163, output_tokens: 202 }, 'claude-3-5-sonnet-20240620', { providerId: 'anthropic', timestamp: new Date(row.ts) })!.total_price)
  })

  it('Claude with streamRawPredict: the recorded stream, as Claude Code receives it', async () => {
    answer(s.upstream, fixture('anthropic/messages-stream-text.sse'), 'sse')
    const row = await recorded(s.t, () => postJson(`${s.t.url}/vertex${CLAUDE}/claude-sonnet-4-5@20250929:streamRawPredict`, { anthropic_version: 'vertex-2023-10-16', stream: true, max_tokens: 64, messages: [] }, HEADERS))
    expect(row).toMatchObject({ provider: 'vertex', model: 'claude-sonnet-4-5-20250929', streamed: 1, input_tokens: 20, output_tokens: 5, estimated: 0, priced: 1 })
    // Through a region (us-east5), Sonnet 4.5 costs 10% above its list (test/providers/data-residency.test.ts).
    expect(row.cost_usd).toBe(libraryPrice('google', { input_tokens: 20, output_tokens: 5 }, 'claude-sonnet-4-5-20250929', row.ts) * 1.1)
  })

  it('Gemini with streamGenerateContent: the recorded stream, its thoughts billed as output', async () => {
    answer(s.upstream, fixture('gemini/stream-generate-content.sse'), 'sse')
    const path = `${GEMINI}/gemini-2.5-flash:streamGenerateContent?alt=sse`
    const row = await recorded(s.t, () => postJson(`${s.t.url}/vertex${path}`, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }, HEADERS))
    expect(s.upstream.requests[0].url).toBe(path)
    expect(row).toMatchObject({ provider: 'vertex', endpoint: 'streamGenerateContent', model: 'gemini-2.5-flash', streamed: 1, input_tokens: 18, output_tokens: 115, reasoning_tokens: 35, priced: 1 })
    expect(row.cost_usd).toBe(libraryPrice('google', { input_tokens: 18, output_tokens: 115 }, 'gemini-2.5-flash', row.ts))
  })

  it("Gemini through Vertex AI's OpenAI-compatible Chat Completions API (endpoints/openapi) is billed as the model it names", async () => {
    // "Using OpenAI libraries with Vertex AI": base URL …/v1/projects/{project}/locations/{location}/endpoints/openapi, model google/gemini-….
    answer(s.upstream, {
      id: 'vertex-openapi-1',
      object: 'chat.completion',
      created: 1764970000,
      model: 'google/gemini-2.5-flash',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello!' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 1_000, completion_tokens: 200, total_tokens: 1_200 },
    })
    const path = '/v1/projects/my-proj/locations/us-central1/endpoints/openapi/chat/completions'
    const row = await recorded(s.t, () => postJson(`${s.t.url}/vertex${path}`, { model: 'google/gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] }, HEADERS))
    expect(s.upstream.requests[0].url).toBe(path)
    expect(row).toMatchObject({ provider: 'vertex', endpoint: 'chat.completions', model: 'gemini-2.5-flash', input_tokens: 1_000, output_tokens: 200, priced: 1 })
    // Gemini 2.5 Flash: $0.30 per 1M input tokens, $2.50 per 1M output tokens (ai.google.dev/gemini-api/docs/pricing, as the price data has it).
    expect(row.cost_usd).toBeCloseTo((1_000 * 0.3 + 200 * 2.5) / 1e6, 15)
  })

  it("Gemini's embeddings through Vertex AI (:predict, as the Gen AI SDK calls them there) are billed by the tokens each prediction counts", async () => {
    // cloud.google.com "Get text embeddings": POST …/publishers/google/models/{model}:predict {instances: [{content}]} answers
    // {predictions: [{embeddings: {statistics: {token_count, truncated}, values}}], metadata: {billableCharacterCount}}.
    answer(s.upstream, {
      predictions: [
        { embeddings: { statistics: { token_count: 6, truncated: false }, values: [0.01, -0.02] } },
        { embeddings: { statistics: { token_count: 9, truncated: false }, values: [0.03, 0.04] } },
      ],
      metadata: { billableCharacterCount: 61 },
    })
    const path = `${GEMINI}/gemini-embedding-001:predict`
    const row = await recorded(s.t, () => postJson(`${s.t.url}/vertex${path}`, { instances: [{ content: 'What is life?' }, { content: 'How do embeddings work here?' }] }, HEADERS))
    expect(s.upstream.requests[0].url).toBe(path)
    expect(row).toMatchObject({ provider: 'vertex', endpoint: 'predict', model: 'gemini-embedding-001', input_tokens: 15, output_tokens: 0, priced: 1, estimated: 0 })
    // gemini-embedding-001: $0.15 per 1M input tokens.
    expect(row.cost_usd).toBeCloseTo((15 * 0.15) / 1e6, 18)
  })

  it('token counting is recorded at no cost', async () => {
    answer(s.upstream, { input_tokens: 42 })
    const row = await recorded(s.t, () => postJson(`${s.t.url}/vertex/v1/projects/my-proj/locations/global/publishers/anthropic/models/count-tokens:rawPredict`, { model: 'claude-sonnet-4-5@20250929', messages: [] }, HEADERS))
    expect(row).toMatchObject({ provider: 'vertex', endpoint: 'count_tokens', cost_usd: 0, output_tokens: 0 })
  })

  it('a location Burnrate cannot name a host for, with no base URL configured: a 404 that says what to set', async () => {
    const t2 = await startTestServer({})
    try {
      const res = await postJson(`${t2.url}/vertex/v1/projects/p/locations/evil.example/publishers/anthropic/models/m:rawPredict`, { messages: [] }, HEADERS)
      expect(res.status).toBe(404)
      expect(res.json().error).toMatchObject({ type: 'not_found' })
      expect(res.json().error.message).toContain('providers.vertex.base_url')
    } finally {
      await t2.cleanup()
    }
  })
})
