import { createHash } from 'node:crypto'
import { calcPrice, extractUsage, findProvider } from '@pydantic/genai-prices'
import { beforeEach, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { postJson, request } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, geminiMultimodalAnswer, geminiVoiceTurn, recorded } from './ledger'

const s = serverOverMockUpstream()
beforeEach(() => {
  s.upstream.requests.length = 0
})

const KEY = 'AIzaSy-test-gemini-key-0000000001'
const BODY = { contents: [{ role: 'user', parts: [{ text: 'Count to 100' }] }] }

function price(usage: Record<string, number>, model: string, ts: number): number {
  const p = calcPrice(usage, model, { providerId: 'google', timestamp: new Date(ts) })
  expect(p).not.toBeNull()
  return p!.total_price
}

/** The counts test/fixtures/README.md gives for each Gemini recording. */
const CASES = [
  {
    file: 'gemini/generate-content-cached-thoughts.json',
    path: '/v1beta/models/gemini-2.5-flash:generateContent',
    model: 'gemini-2.5-flash',
    // promptTokenCount 3520 includes cachedContentTokenCount 3512; output = candidates 2 + thoughts 42
    input: 3520,
    cacheRead: 3512,
    output: 44,
    reasoning: 42,
  },
  {
    file: 'gemini/generate-content-thoughts.json',
    path: '/v1beta/models/gemini-3-pro-preview:generateContent',
    model: 'gemini-3-pro-preview',
    input: 9,
    cacheRead: 0,
    output: 28 + 244,
    reasoning: 244,
  },
  {
    file: 'gemini/stream-generate-content.sse',
    path: '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
    model: 'gemini-2.5-flash',
    // the last event's cumulative usage, not the sum of the three
    input: 18,
    cacheRead: 0,
    output: 80 + 35,
    reasoning: 35,
  },
  {
    file: 'gemini/stream-generate-content-tool-use-prompt.sse',
    path: '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
    model: 'gemini-2.5-flash',
    // toolUsePromptTokenCount 4610 is billed as input though not in promptTokenCount 32
    input: 32 + 4610,
    cacheRead: 0,
    output: 25 + 37,
    reasoning: 37,
  },
]

describe('Gemini fixtures are metered and priced exactly', () => {
  for (const c of CASES) {
    it(c.file, async () => {
      const sse = c.file.endsWith('.sse')
      answer(s.upstream, fixture(c.file), sse ? 'sse' : 'json')
      let res: any
      const row = await recorded(s.t, async () => {
        res = await postJson(`${s.t.url}/gemini${c.path}`, BODY, { 'x-goog-api-key': KEY })
      })
      expect(res.status).toBe(200)
      expect(res.body.equals(fixture(c.file))).toBe(true)
      expect(s.upstream.requests[0].url).toBe(c.path)
      expect(s.upstream.requests[0].headers['x-goog-api-key']).toBe(KEY)
      expect(row).toMatchObject({
        provider: 'gemini',
        model: c.model,
        input_tokens: c.input,
        cache_read_tokens: c.cacheRead,
        output_tokens: c.output,
        reasoning_tokens: c.reasoning,
        streamed: sse ? 1 : 0,
        estimated: 0,
        priced: 1,
        api_key_hash: createHash('sha256').update(KEY).digest('hex'),
      })
      // Gemini's id of the answer, for matching the call in Gemini CLI's own logs.
      const id = /"responseId"\s*:\s*"([^"]+)"/.exec(fixture(c.file).toString())?.[1]
      expect(id).toBeTruthy()
      expect(row.response_id).toBe(id)
      const usage: Record<string, number> = { input_tokens: c.input, output_tokens: c.output }
      if (c.cacheRead) usage.cache_read_tokens = c.cacheRead
      expect(row.cost_usd).toBe(price(usage, c.model, row.ts))
      expect(row.cost_usd).toBeGreaterThan(0)
    })
  }

  it('streamGenerateContent without alt=sse (one JSON array) counts the last element', async () => {
    // The same three responses as the SSE recording, sent the way the API does without alt=sse.
    const events = fixture('gemini/stream-generate-content.sse')
      .toString('utf8')
      .split(/\r\n\r\n/)
      .filter((e) => e.startsWith('data: '))
      .map((e) => e.slice('data: '.length))
    expect(events).toHaveLength(3)
    const array = `[${events.join(',\r\n')}]`
    answer(s.upstream, array)
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent`, BODY, { 'x-goog-api-key': KEY }),
    )
    expect(s.upstream.requests[0].url).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent')
    expect(row).toMatchObject({ endpoint: 'streamGenerateContent', input_tokens: 18, output_tokens: 115, reasoning_tokens: 35, streamed: 0 })
    expect(row.cost_usd).toBe(price({ input_tokens: 18, output_tokens: 115 }, 'gemini-2.5-flash', row.ts))
  })

  it('the bare /v1beta path (a Gemini base URL without /gemini) reaches Gemini too', async () => {
    answer(s.upstream, fixture('gemini/generate-content-cached-thoughts.json'))
    const row = await recorded(s.t, () => postJson(`${s.t.url}/v1beta/models/gemini-2.5-flash:generateContent`, BODY, { 'x-goog-api-key': KEY }))
    expect(s.upstream.requests[0].url).toBe('/v1beta/models/gemini-2.5-flash:generateContent')
    expect(row).toMatchObject({ provider: 'gemini', model: 'gemini-2.5-flash', input_tokens: 3520, output_tokens: 44 })
  })

  it("Gemini's v1 API on the bare /v1 path (Gemini CLI with GOOGLE_GENAI_API_VERSION=v1) reaches Gemini, not OpenAI", async () => {
    answer(s.upstream, fixture('gemini/stream-generate-content.sse'), 'sse')
    const ua = { 'user-agent': 'GeminiCLI/0.61.0/gemini-2.5-flash (linux; x64; terminal)', 'x-goog-api-client': 'google-genai-sdk/1.30.0 gl-node/v22.17.0' }
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse`, BODY, { ...ua, 'x-goog-api-key': KEY }),
    )
    expect(s.upstream.requests[0].url).toBe('/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse')
    expect(row).toMatchObject({ provider: 'gemini', agent: 'gemini-cli', model: 'gemini-2.5-flash', input_tokens: 18, output_tokens: 115 })
    expect(row.cost_usd).toBe(price({ input_tokens: 18, output_tokens: 115 }, 'gemini-2.5-flash', row.ts))
    // Its key as a bearer token (GEMINI_API_KEY_AUTH_MECHANISM=bearer): the path alone says Gemini.
    answer(s.upstream, fixture('gemini/generate-content-thoughts.json'))
    const bearer = await recorded(s.t, () =>
      postJson(`${s.t.url}/v1/models/gemini-3-pro-preview:generateContent`, BODY, { ...ua, authorization: `Bearer ${KEY}` }),
    )
    expect(bearer).toMatchObject({ provider: 'gemini', model: 'gemini-3-pro-preview', input_tokens: 9 })
  })

  it("on the bare /v1 path a Gemini key goes only to Gemini; OpenAI's model list and retrieve stay OpenAI's", async () => {
    answer(s.upstream, { models: [] })
    const list = await recorded(s.t, () => request(`${s.t.url}/v1/models?key=${KEY}`))
    expect(list.provider).toBe('gemini')
    expect((await recorded(s.t, () => request(`${s.t.url}/v1/models`, { headers: { 'x-goog-api-key': KEY } }))).provider).toBe('gemini')
    const openai = { authorization: 'Bearer sk-proj-test-openai-key-0000000001' }
    expect((await recorded(s.t, () => request(`${s.t.url}/v1/models`, { headers: openai }))).provider).toBe('openai')
    // A fine-tuned model's id has colons, but no Gemini method after them.
    expect((await recorded(s.t, () => request(`${s.t.url}/v1/models/ft:gpt-4o-mini:acme::abc123`, { headers: openai }))).provider).toBe('openai')
  })

  it('takes the key from ?key= and passes the query upstream untouched', async () => {
    answer(s.upstream, fixture('gemini/generate-content-thoughts.json'))
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/gemini/v1beta/models/gemini-3-pro-preview:generateContent?key=${KEY}`, BODY),
    )
    expect(s.upstream.requests[0].url).toBe(`/v1beta/models/gemini-3-pro-preview:generateContent?key=${KEY}`)
    expect(row.api_key_hash).toBe(createHash('sha256').update(KEY).digest('hex'))
    expect(row.key_hint).toBe('AIz…0001')
  })
})

describe('Gemini pricing beyond the recordings', () => {
  it('prices a prompt above 200k tokens at the higher tier', async () => {
    const usageMetadata = { promptTokenCount: 250_000, candidatesTokenCount: 1_000, thoughtsTokenCount: 500, totalTokenCount: 251_500 }
    answer(s.upstream, { candidates: [{ content: { parts: [{ text: 'ok' }], role: 'model' }, finishReason: 'STOP' }], usageMetadata, modelVersion: 'gemini-2.5-pro' })
    const row = await recorded(s.t, () => postJson(`${s.t.url}/gemini/v1beta/models/gemini-2.5-pro:generateContent`, BODY, { 'x-goog-api-key': KEY }))
    expect(row).toMatchObject({ model: 'gemini-2.5-pro', input_tokens: 250_000, output_tokens: 1_500 })
    expect(row.cost_usd).toBe(price({ input_tokens: 250_000, output_tokens: 1_500 }, 'gemini-2.5-pro', row.ts))
    // Google's published long-context rates for 2.5 Pro: $2.50/M input, $15/M output above 200k.
    expect(row.cost_usd).toBeCloseTo(250_000 * 2.5e-6 + 1_500 * 15e-6, 12)
  })

  it('prices a prompt just under the tier at the base rate', async () => {
    const usageMetadata = { promptTokenCount: 199_999, candidatesTokenCount: 1_000, totalTokenCount: 200_999 }
    answer(s.upstream, { candidates: [], usageMetadata, modelVersion: 'gemini-2.5-pro' })
    const row = await recorded(s.t, () => postJson(`${s.t.url}/gemini/v1beta/models/gemini-2.5-pro:generateContent`, BODY, { 'x-goog-api-key': KEY }))
    expect(row.cost_usd).toBeCloseTo(199_999 * 1.25e-6 + 1_000 * 10e-6, 12)
  })

  it('prices audio prompt tokens at the audio rate', async () => {
    const usageMetadata = {
      promptTokenCount: 1_000,
      candidatesTokenCount: 10,
      totalTokenCount: 1_010,
      promptTokensDetails: [
        { modality: 'TEXT', tokenCount: 600 },
        { modality: 'AUDIO', tokenCount: 400 },
      ],
    }
    answer(s.upstream, { candidates: [], usageMetadata, modelVersion: 'gemini-2.5-flash' })
    const row = await recorded(s.t, () => postJson(`${s.t.url}/gemini/v1beta/models/gemini-2.5-flash:generateContent`, BODY, { 'x-goog-api-key': KEY }))
    expect(row.input_tokens).toBe(1_000)
    expect(row.cost_usd).toBe(price({ input_tokens: 1_000, input_audio_tokens: 400, output_tokens: 10 }, 'gemini-2.5-flash', row.ts))
    // 2.5 Flash: text $0.30/M, audio $1.00/M, output $2.50/M
    expect(row.cost_usd).toBeCloseTo(600 * 0.3e-6 + 400 * 1e-6 + 10 * 2.5e-6, 12)
  })

  // A voice turn: the text system prompt comes from the cache, a new audio clip does not. The
  // price library refuses cache reads beside audio without the cached audio count, and the call
  // was then priced with no modality split: all 5,000 audio tokens at the text rate (2.9x less).
  for (const [what, cacheTokensDetails] of [
    ['names only text', [{ modality: 'TEXT', tokenCount: 800 }]],
    ['is absent', undefined],
  ] as const) {
    it(`prices audio at the audio rate beside a cache hit whose modality list ${what}`, async () => {
      answer(s.upstream, { candidates: [], usageMetadata: geminiVoiceTurn(cacheTokensDetails), modelVersion: 'gemini-2.5-flash' })
      const row = await recorded(s.t, () => postJson(`${s.t.url}/gemini/v1beta/models/gemini-2.5-flash:generateContent`, BODY, { 'x-goog-api-key': KEY }))
      expect(row).toMatchObject({ input_tokens: 6_000, cache_read_tokens: 800, output_tokens: 100, priced: 1 })
      // 2.5 Flash: text $0.30/M, cached text $0.03/M, audio $1.00/M, output $2.50/M
      expect(row.cost_usd).toBeCloseTo(200 * 0.3e-6 + 800 * 0.03e-6 + 5_000 * 1e-6 + 100 * 2.5e-6, 12)
      expect(row.cost_usd).toBe(
        price({ input_tokens: 6_000, cache_read_tokens: 800, input_audio_tokens: 5_000, cache_audio_read_tokens: 0, output_tokens: 100 }, 'gemini-2.5-flash', row.ts),
      )
    })
  }

  it('prices cached audio at the cached audio rate when the cache holds some of the audio', async () => {
    const usageMetadata = geminiVoiceTurn([{ modality: 'TEXT', tokenCount: 300 }, { modality: 'AUDIO', tokenCount: 500 }])
    answer(s.upstream, { candidates: [], usageMetadata, modelVersion: 'gemini-2.5-flash' })
    const row = await recorded(s.t, () => postJson(`${s.t.url}/gemini/v1beta/models/gemini-2.5-flash:generateContent`, BODY, { 'x-goog-api-key': KEY }))
    const prices = findProvider({ providerId: 'google' })!.models.find((m) => m.id === 'gemini-2.5-flash')!.prices
    expect(prices).toMatchObject({ cache_audio_read_mtok: expect.any(Number) })
    const p = prices as Record<string, number>
    // text 1,000 (300 of it cached), audio 5,000 (500 of it cached)
    expect(row.cost_usd).toBeCloseTo((700 * p.input_mtok + 300 * p.cache_read_mtok + 4_500 * 1 + 500 * p.cache_audio_read_mtok + 100 * p.output_mtok) / 1e6, 12)
  })

  it('prices video output at the video rate, as genai-prices reads the same answer', async () => {
    // gemini-omni-flash-preview generates video: $1.50/M input, $9/M text output, $17.50/M video output.
    const body = {
      candidates: [{ content: { parts: [{ text: 'ok' }], role: 'model' }, finishReason: 'STOP' }],
      usageMetadata: {
        promptTokenCount: 1_200,
        candidatesTokenCount: 20_040,
        totalTokenCount: 21_240,
        promptTokensDetails: [{ modality: 'TEXT', tokenCount: 1_200 }],
        candidatesTokensDetails: [
          { modality: 'TEXT', tokenCount: 40 },
          { modality: 'VIDEO', tokenCount: 20_000 },
        ],
      },
      modelVersion: 'gemini-omni-flash-preview',
    }
    answer(s.upstream, body)
    const row = await recorded(s.t, () => postJson(`${s.t.url}/gemini/v1beta/models/gemini-omni-flash-preview:generateContent`, BODY, { 'x-goog-api-key': KEY }))
    expect(row).toMatchObject({ model: 'gemini-omni-flash-preview', input_tokens: 1_200, output_tokens: 20_040, priced: 1 })
    expect(row.cost_usd).toBeCloseTo(1_200 * 1.5e-6 + 40 * 9e-6 + 20_000 * 17.5e-6, 12)
    // The oracle: the library's own reading of the same answer, priced by the library.
    const lib = extractUsage(findProvider({ providerId: 'google' })!, body)
    expect(row.cost_usd).toBe(price(lib.usage as Record<string, number>, 'gemini-omni-flash-preview', row.ts))
  })

  it('prices audio output and image input of the answer as genai-prices does', async () => {
    const body = geminiMultimodalAnswer('gemini-2.5-flash')
    answer(s.upstream, body)
    const row = await recorded(s.t, () => postJson(`${s.t.url}/gemini/v1beta/models/gemini-2.5-flash:generateContent`, BODY, { 'x-goog-api-key': KEY }))
    expect(row).toMatchObject({ input_tokens: 3_000, cache_read_tokens: 1_000, output_tokens: 500, priced: 1 })
    const lib = extractUsage(findProvider({ providerId: 'google' })!, body)
    expect(row.cost_usd).toBe(price(lib.usage as Record<string, number>, 'gemini-2.5-flash', row.ts))
  })

  it('records countTokens as a non-billable call with no cost', async () => {
    answer(s.upstream, { totalTokens: 31 })
    const row = await recorded(s.t, () => postJson(`${s.t.url}/gemini/v1beta/models/gemini-2.5-flash:countTokens`, BODY, { 'x-goog-api-key': KEY }))
    expect(row).toMatchObject({ endpoint: 'countTokens', input_tokens: 0, output_tokens: 0, cost_usd: 0, estimated: 0 })
  })
})

describe('Gemini through its other endpoints', () => {
  it('the OpenAI-compatible API (/v1beta/openai/...) is metered from OpenAI-shaped usage', async () => {
    answer(s.upstream, {
      id: 'x',
      object: 'chat.completion',
      created: 1763700000,
      model: 'gemini-2.5-flash',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 },
    })
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/gemini/v1beta/openai/chat/completions`, { model: 'models/gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${KEY}` }),
    )
    expect(s.upstream.requests[0].url).toBe('/v1beta/openai/chat/completions')
    expect(row).toMatchObject({ provider: 'gemini', endpoint: 'chat.completions', model: 'gemini-2.5-flash', input_tokens: 120, output_tokens: 30, estimated: 0 })
    expect(row.cost_usd).toBe(price({ input_tokens: 120, output_tokens: 30 }, 'gemini-2.5-flash', row.ts))
  })

  it('the OpenAI-compatible API: thinking counted only in total_tokens is billed as output', async () => {
    // Gemini's totalTokenCount is prompt + candidates + thoughts; an answer whose completion_tokens
    // holds only the candidates (and names no reasoning_tokens) still owes the thoughts.
    answer(s.upstream, {
      id: 'x',
      object: 'chat.completion',
      created: 1763700000,
      model: 'gemini-2.5-flash',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 120, completion_tokens: 30, total_tokens: 1_174 },
    })
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/gemini/v1beta/openai/chat/completions`, { model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${KEY}` }),
    )
    expect(row).toMatchObject({ input_tokens: 120, output_tokens: 1_054, reasoning_tokens: 1_024, estimated: 0 })
    // 2.5 Flash: $0.30/M input, $2.50/M output (thinking included)
    expect(row.cost_usd).toBeCloseTo((120 * 0.3 + 1_054 * 2.5) / 1e6, 15)
  })

  it('the OpenAI-compatible API: thinking already in completion_tokens is not counted twice', async () => {
    answer(s.upstream, {
      id: 'x',
      object: 'chat.completion',
      created: 1763700000,
      model: 'gemini-2.5-flash',
      choices: [],
      usage: { prompt_tokens: 120, completion_tokens: 1_054, total_tokens: 1_174, completion_tokens_details: { reasoning_tokens: 1_024 } },
    })
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/gemini/v1beta/openai/chat/completions`, { model: 'gemini-2.5-flash', messages: [] }, { authorization: `Bearer ${KEY}` }),
    )
    expect(row).toMatchObject({ input_tokens: 120, output_tokens: 1_054, reasoning_tokens: 1_024 })
  })

  it('embedContent returns no usage: its input is estimated from the request text', async () => {
    answer(s.upstream, { embedding: { values: [0.01, -0.02, 0.03] } })
    const text = 'The quick brown fox jumps over the lazy dog.'
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/gemini/v1beta/models/gemini-embedding-001:embedContent`, { model: 'models/gemini-embedding-001', content: { parts: [{ text }] } }, { 'x-goog-api-key': KEY }),
    )
    expect(row).toMatchObject({ endpoint: 'embedContent', model: 'gemini-embedding-001', estimated: 1, output_tokens: 0, priced: 1 })
    // cl100k_base: 10 tokens for this sentence
    expect(row.input_tokens).toBe(10)
    expect(row.cost_usd).toBe(price({ input_tokens: 10, output_tokens: 0 }, 'gemini-embedding-001', row.ts))
  })
})
