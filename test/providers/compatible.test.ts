import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { calcPrice, extractUsage, findProvider } from '@pydantic/genai-prices'
import { beforeEach, describe, expect, it } from 'vitest'
import { PROVIDERS } from '../../src/main/providers/registry'
import { postJson, request } from '../support/http'
import { startMockUpstream } from '../support/mock-upstream'
import { serverOverMockUpstream, startTestServer } from '../support/server'
import { answer, recorded, sonarPrice } from './ledger'

const s = serverOverMockUpstream()
beforeEach(() => {
  s.upstream.requests.length = 0
})

/**
 * Each OpenAI-compatible provider: its real base URL (from its own docs), the upstream path a
 * chat completion must reach (the base URL's path + `/chat/completions`), and a model its
 * price list (genai-prices) knows.
 */
const COMPATIBLE = [
  { name: 'openrouter', base: 'https://openrouter.ai/api/v1', path: '/api/v1/chat/completions', pricing: 'openrouter', model: 'openai/gpt-4o' },
  { name: 'groq', base: 'https://api.groq.com/openai/v1', path: '/openai/v1/chat/completions', pricing: 'groq', model: 'llama-3.3-70b-versatile' },
  { name: 'mistral', base: 'https://api.mistral.ai/v1', path: '/v1/chat/completions', pricing: 'mistral', model: 'mistral-large-latest' },
  { name: 'deepseek', base: 'https://api.deepseek.com/v1', path: '/v1/chat/completions', pricing: 'deepseek', model: 'deepseek-chat' },
  { name: 'xai', base: 'https://api.x.ai/v1', path: '/v1/chat/completions', pricing: 'x-ai', model: 'grok-3' },
  { name: 'together', base: 'https://api.together.xyz/v1', path: '/v1/chat/completions', pricing: 'together', model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo' },
  { name: 'fireworks', base: 'https://api.fireworks.ai/inference/v1', path: '/inference/v1/chat/completions', pricing: 'fireworks', model: 'accounts/fireworks/models/llama-v3p1-8b-instruct' },
  { name: 'cerebras', base: 'https://api.cerebras.ai/v1', path: '/v1/chat/completions', pricing: 'cerebras', model: 'llama3.1-8b' },
  { name: 'perplexity', base: 'https://api.perplexity.ai', path: '/chat/completions', pricing: 'perplexity', model: 'sonar-pro' },
  { name: 'moonshot', base: 'https://api.moonshot.ai/v1', path: '/v1/chat/completions', pricing: 'moonshotai', model: 'kimi-k2-0905-preview' },
  { name: 'zai', base: 'https://api.z.ai/api/paas/v4', path: '/api/paas/v4/chat/completions', pricing: 'zai', model: 'glm-5.3' },
]

function completion(model: string, usage: Record<string, unknown>) {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1763700000,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hello!' }, finish_reason: 'stop' }],
    usage,
  }
}

function chunk(model: string, delta: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1763700000, model, choices: delta ? [{ index: 0, delta }] : [], ...extra })}\n\n`
}

describe('OpenAI-compatible providers', () => {
  for (const p of COMPATIBLE) {
    it(`${p.name}: real base URL, joined upstream path, usage and price`, async () => {
      const provider = PROVIDERS.find((x) => x.name === p.name)
      expect(provider?.defaultBaseUrl).toBe(p.base)
      expect(provider?.mount).toBe(`/${p.name}/v1`)
      answer(s.upstream, completion(p.model, { prompt_tokens: 1200, completion_tokens: 300, total_tokens: 1500 }))
      const row = await recorded(s.t, () =>
        postJson(`${s.t.url}/${p.name}/v1/chat/completions`, { model: p.model, messages: [{ role: 'user', content: 'hi' }] }, {
          authorization: `Bearer sk-${p.name}-test-key-00000001`,
        }),
      )
      expect(s.upstream.requests[0].url).toBe(p.path)
      expect(s.upstream.requests[0].headers.authorization).toBe(`Bearer sk-${p.name}-test-key-00000001`)
      expect(row).toMatchObject({ provider: p.name, model: p.model, endpoint: 'chat.completions', input_tokens: 1200, output_tokens: 300, priced: 1 })
      const at = new Date(row.ts)
      const expected = calcPrice({ input_tokens: 1200, output_tokens: 300 }, p.model, { providerId: p.pricing, timestamp: at })
      expect(expected).not.toBeNull()
      // Perplexity's request fee is the one of the search context size, Perplexity's default (low)
      // when neither the request nor the answer names one: Sonar Pro's $6 per 1,000 requests.
      expect(row.cost_usd).toBe(p.name === 'perplexity' ? sonarPrice({ input_tokens: 1200, output_tokens: 300 }, p.model, 6, at) : expected!.total_price)
      expect(row.cost_usd).toBeGreaterThan(0)
    })
  }

  it('keeps the path below the mount and the query when joining (Groq models list)', async () => {
    answer(s.upstream, { object: 'list', data: [] })
    const row = await recorded(s.t, () => request(`${s.t.url}/groq/v1/models?limit=5`, { headers: { authorization: 'Bearer gsk-test-000000000001' } }))
    expect(s.upstream.requests[0].url).toBe('/openai/v1/models?limit=5')
    expect(row).toMatchObject({ provider: 'groq', endpoint: 'other', cost_usd: 0, estimated: 0 })
  })

  it('Moonshot: a cache hit reported as a top-level cached_tokens (beside prompt_tokens, which includes it) is priced at the cache-read rate', async () => {
    const model = 'kimi-k2-0905-preview'
    answer(s.upstream, completion(model, { prompt_tokens: 2989, completion_tokens: 40, total_tokens: 3029, cached_tokens: 2989 }))
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/moonshot/v1/chat/completions`, { model, messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-moonshot-test-00000001' }),
    )
    expect(row).toMatchObject({ provider: 'moonshot', input_tokens: 2989, cache_read_tokens: 2989, output_tokens: 40, priced: 1 })
    const expected = calcPrice({ input_tokens: 2989, cache_read_tokens: 2989, output_tokens: 40 }, model, { providerId: 'moonshotai', timestamp: new Date(row.ts) })
    expect(row.cost_usd).toBe(expected!.total_price)
  })

  it('Groq streams: usage from the last chunk x_groq', async () => {
    const model = 'llama-3.3-70b-versatile'
    const body =
      chunk(model, { role: 'assistant', content: '' }) +
      chunk(model, { content: 'Hello there' }) +
      chunk(model, {}, { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], x_groq: { id: 'req_01', usage: { queue_time: 0.01, prompt_tokens: 40, prompt_time: 0.002, completion_tokens: 3, completion_time: 0.01, total_tokens: 43, total_time: 0.012 } } }) +
      'data: [DONE]\n\n'
    answer(s.upstream, body, 'sse')
    const row = await recorded(s.t, () => postJson(`${s.t.url}/groq/v1/chat/completions`, { model, stream: true, messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer gsk-test-000000000001' }))
    expect(row).toMatchObject({ provider: 'groq', streamed: 1, input_tokens: 40, output_tokens: 3, estimated: 0 })
    expect(row.cost_usd).toBe(calcPrice({ input_tokens: 40, output_tokens: 3 }, model, { providerId: 'groq', timestamp: new Date(row.ts) })!.total_price)
  })

  it('OpenRouter: records the charge OpenRouter reports (usage.cost), cache writes included', async () => {
    const model = 'anthropic/claude-sonnet-4.5'
    const usage = {
      prompt_tokens: 2000,
      completion_tokens: 100,
      total_tokens: 2100,
      cost: 0.0123456,
      is_byok: false,
      prompt_tokens_details: { cached_tokens: 500, cache_write_tokens: 1000, audio_tokens: 0 },
      cost_details: { upstream_inference_cost: null },
      completion_tokens_details: { reasoning_tokens: 0 },
    }
    answer(s.upstream, completion(model, usage))
    const row = await recorded(s.t, () => postJson(`${s.t.url}/openrouter/v1/chat/completions`, { model, messages: [] }, { authorization: 'Bearer sk-or-v1-test-0000000001' }))
    expect(row).toMatchObject({ model, input_tokens: 2000, cache_read_tokens: 500, cache_write_tokens: 1000, output_tokens: 100, priced: 1 })
    expect(row.cost_usd).toBe(0.0123456)
  })

  it('OpenRouter with a bring-your-own key: its fee plus the upstream charge', async () => {
    const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, cost: 0.0001, is_byok: true, cost_details: { upstream_inference_cost: 0.002 } }
    answer(s.upstream, completion('openai/gpt-4o', usage))
    const row = await recorded(s.t, () => postJson(`${s.t.url}/openrouter/v1/chat/completions`, { model: 'openai/gpt-4o', messages: [] }, { authorization: 'Bearer sk-or-v1-test-0000000001' }))
    expect(row.cost_usd).toBe(0.0001 + 0.002)
  })

  it('OpenRouter streams: the final usage chunk carries the cost', async () => {
    const model = 'openai/gpt-4o-mini'
    const body =
      chunk(model, { role: 'assistant', content: 'Hi' }) +
      chunk(model, {}, { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }) +
      chunk(model, null as any, { usage: { prompt_tokens: 12, completion_tokens: 2, total_tokens: 14, cost: 0.0000042 } }) +
      'data: [DONE]\n\n'
    answer(s.upstream, body, 'sse')
    const row = await recorded(s.t, () => postJson(`${s.t.url}/openrouter/v1/chat/completions`, { model, stream: true, messages: [] }, { authorization: 'Bearer sk-or-v1-test-0000000001' }))
    expect(row).toMatchObject({ streamed: 1, input_tokens: 12, output_tokens: 2, estimated: 0 })
    expect(row.cost_usd).toBe(0.0000042)
  })

  it('Perplexity: records usage.cost.total_cost (request fee included)', async () => {
    const usage = {
      prompt_tokens: 8,
      completion_tokens: 120,
      total_tokens: 128,
      search_context_size: 'low',
      cost: { input_tokens_cost: 0.000024, output_tokens_cost: 0.0018, request_cost: 0.006, total_cost: 0.007824 },
    }
    answer(s.upstream, completion('sonar-pro', usage))
    const row = await recorded(s.t, () => postJson(`${s.t.url}/perplexity/v1/chat/completions`, { model: 'sonar-pro', messages: [] }, { authorization: 'Bearer pplx-test-00000000001' }))
    expect(s.upstream.requests[0].url).toBe('/chat/completions')
    expect(row).toMatchObject({ input_tokens: 8, output_tokens: 120 })
    expect(row.cost_usd).toBe(0.007824)
  })

  it('Perplexity: reasoning and citation tokens beside completion_tokens and search queries are billed (no cost in the answer)', async () => {
    // Sonar Deep Research's usage shape (Perplexity's docs): total_tokens = prompt + completion only.
    const usage = { prompt_tokens: 19, completion_tokens: 9_582, total_tokens: 9_601, citation_tokens: 13_207, num_search_queries: 29, reasoning_tokens: 142_536 }
    const body = completion('sonar-deep-research', usage)
    answer(s.upstream, body)
    const row = await recorded(s.t, () => postJson(`${s.t.url}/perplexity/v1/chat/completions`, { model: 'sonar-deep-research', messages: [] }, { authorization: 'Bearer pplx-test-00000000001' }))
    expect(row).toMatchObject({ input_tokens: 19, output_tokens: 9_582 + 13_207 + 142_536, reasoning_tokens: 142_536, priced: 1 })
    // $2/M input, $8/M output, $2/M citation, $3/M reasoning, $5 per 1,000 searches
    expect(row.cost_usd).toBeCloseTo((19 * 2 + 9_582 * 8 + 13_207 * 2 + 142_536 * 3) / 1e6 + 29 * 5 / 1000, 12)
    // The oracle: the library's own reading of the same answer, priced by the library.
    const lib = extractUsage(findProvider({ providerId: 'perplexity' })!, body)
    expect(row.cost_usd).toBe(calcPrice(lib.usage, 'sonar-deep-research', { providerId: 'perplexity', timestamp: new Date(row.ts) })!.total_price)
  })

  it('Perplexity: with usage.cost the charge is the reported one; the tokens still count reasoning and citations', async () => {
    const usage = { prompt_tokens: 19, completion_tokens: 100, total_tokens: 119, citation_tokens: 300, num_search_queries: 2, reasoning_tokens: 500, cost: { total_cost: 0.0123 } }
    answer(s.upstream, completion('sonar-deep-research', usage))
    const row = await recorded(s.t, () => postJson(`${s.t.url}/perplexity/v1/chat/completions`, { model: 'sonar-deep-research', messages: [] }, { authorization: 'Bearer pplx-test-00000000001' }))
    expect(row).toMatchObject({ input_tokens: 19, output_tokens: 900, reasoning_tokens: 500, cost_usd: 0.0123 })
  })

  it("Perplexity's Agent API (Responses format) goes to /v1/responses and is metered at its reported charge", async () => {
    const usage = { input_tokens: 100, output_tokens: 20, total_tokens: 120, cost: { currency: 'USD', input_cost: 0.000025, output_cost: 0.00004, total_cost: 0.000065 } }
    answer(s.upstream, { id: 'resp_1', object: 'response', status: 'completed', model: 'openai/gpt-5-mini', output: [], usage })
    const H = { authorization: 'Bearer pplx-test-00000000001' }
    const row = await recorded(s.t, () => postJson(`${s.t.url}/perplexity/v1/responses`, { model: 'openai/gpt-5-mini', input: 'hi' }, H))
    expect(s.upstream.requests.at(-1)!.url).toBe('/v1/responses')
    expect(row).toMatchObject({ provider: 'perplexity', endpoint: 'responses', input_tokens: 100, output_tokens: 20, cost_usd: 0.000065 })
    answer(s.upstream, { id: 'resp_2', object: 'response', status: 'completed', model: 'openai/gpt-5-mini', output: [], usage })
    const agent = await recorded(s.t, () => postJson(`${s.t.url}/perplexity/v1/agent`, { model: 'openai/gpt-5-mini', input: 'hi' }, H))
    expect(s.upstream.requests.at(-1)!.url).toBe('/v1/agent')
    expect(agent).toMatchObject({ endpoint: 'responses', cost_usd: 0.000065 })
  })

  it('xAI: the charge it reports in ticks (server-side tool calls included) is the cost, in Responses and streamed chat', async () => {
    // grok-4-fast-reasoning with three web searches: the tokens are a fraction of a cent, the
    // searches (billed per call, absent from the price data) most of the $0.015295 billed.
    const ticks = 152_950_000
    answer(s.upstream, {
      id: 'resp_1', object: 'response', status: 'completed', model: 'grok-4-fast-reasoning',
      output: [
        ...['a', 'b', 'c'].map((q, i) => ({ type: 'web_search_call', id: `ws_${i}`, status: 'completed', action: { type: 'search', query: q } })),
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'hi' }] },
      ],
      usage: {
        input_tokens: 1000, input_tokens_details: { cached_tokens: 0 }, output_tokens: 190, output_tokens_details: { reasoning_tokens: 150 }, total_tokens: 1190,
        num_server_side_tools_used: 3, server_side_tool_usage_details: { web_search_calls: 3 }, cost_in_usd_ticks: ticks,
      },
    })
    const H = { authorization: 'Bearer xai-test-000000000000001' }
    const row = await recorded(s.t, () => postJson(`${s.t.url}/xai/v1/responses`, { model: 'grok-4-fast-reasoning', input: 'news?', tools: [{ type: 'web_search' }] }, H))
    expect(row).toMatchObject({ provider: 'xai', endpoint: 'responses', input_tokens: 1000, output_tokens: 190, priced: 1 })
    expect(row.cost_usd).toBe(ticks / 1e10)

    const body =
      chunk('grok-3-mini', { role: 'assistant', content: 'Hi' }) +
      chunk('grok-3-mini', null as any, { usage: { prompt_tokens: 32, completion_tokens: 9, total_tokens: 135, completion_tokens_details: { reasoning_tokens: 94 }, cost_in_usd_ticks: 377_560 } }) +
      'data: [DONE]\n\n'
    answer(s.upstream, body, 'sse')
    const streamed = await recorded(s.t, () => postJson(`${s.t.url}/xai/v1/chat/completions`, { model: 'grok-3-mini', stream: true, messages: [] }, H))
    expect(streamed).toMatchObject({ streamed: 1, input_tokens: 32, output_tokens: 103, estimated: 0 })
    expect(streamed.cost_usd).toBe(377_560 / 1e10)
  })

  it('DeepSeek: prompt_cache_hit_tokens are cache reads, priced at the cache rate', async () => {
    const usage = { prompt_tokens: 1000, completion_tokens: 50, total_tokens: 1050, prompt_cache_hit_tokens: 800, prompt_cache_miss_tokens: 200 }
    answer(s.upstream, completion('deepseek-chat', usage))
    const row = await recorded(s.t, () => postJson(`${s.t.url}/deepseek/v1/chat/completions`, { model: 'deepseek-chat', messages: [] }, { authorization: 'Bearer sk-deepseek-00000000001' }))
    expect(row).toMatchObject({ input_tokens: 1000, cache_read_tokens: 800, output_tokens: 50 })
    const expected = calcPrice({ input_tokens: 1000, cache_read_tokens: 800, output_tokens: 50 }, 'deepseek-chat', { providerId: 'deepseek', timestamp: new Date(row.ts) })!.total_price
    expect(row.cost_usd).toBe(expected)
    const uncached = calcPrice({ input_tokens: 1000, output_tokens: 50 }, 'deepseek-chat', { providerId: 'deepseek', timestamp: new Date(row.ts) })!.total_price
    expect(row.cost_usd).toBeLessThan(uncached)
  })
})

describe('Mistral fill-in-the-middle (/mistral/v1/fim/completions, Codestral in editors)', () => {
  it('is metered and priced, not recorded at cost 0', async () => {
    const body = completion('codestral-2508', { prompt_tokens: 1_500, completion_tokens: 64, total_tokens: 1_564 })
    answer(s.upstream, body)
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/mistral/v1/fim/completions`, { model: 'codestral-latest', prompt: 'def f(', suffix: ')' }, { authorization: 'Bearer mistral-test-00000000001' }),
    )
    expect(s.upstream.requests[0].url).toBe('/v1/fim/completions')
    expect(row).toMatchObject({ provider: 'mistral', endpoint: 'fim.completions', model: 'codestral-2508', input_tokens: 1_500, output_tokens: 64, estimated: 0 })
    const p = calcPrice({ input_tokens: 1_500, output_tokens: 64 }, 'codestral-2508', { providerId: 'mistral', timestamp: new Date(row.ts) })!
    expect(row).toMatchObject({ priced: 1, cost_usd: p.total_price })
    // Codestral: $0.30/M input, $0.90/M output
    expect(row.cost_usd).toBeCloseTo((1_500 * 0.3 + 64 * 0.9) / 1e6, 15)
  })
})

describe("Anthropic's OpenAI SDK compatibility (/anthropic/v1/chat/completions)", () => {
  it('is metered and priced as the Claude model it names, not recorded at cost 0', async () => {
    const body = completion('claude-sonnet-4-5-20250929', { prompt_tokens: 2_000, completion_tokens: 300, total_tokens: 2_300 })
    answer(s.upstream, body)
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/anthropic/v1/chat/completions`, { model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-ant-compat-000000000001' }),
    )
    expect(s.upstream.requests[0].url).toBe('/v1/chat/completions')
    expect(row).toMatchObject({ provider: 'anthropic', endpoint: 'chat.completions', model: 'claude-sonnet-4-5-20250929', input_tokens: 2_000, output_tokens: 300, priced: 1, estimated: 0 })
    // Sonnet 4.5: $3/M input, $15/M output
    expect(row.cost_usd).toBeCloseTo((2_000 * 3 + 300 * 15) / 1e6, 15)
    const lib = extractUsage(findProvider({ providerId: 'anthropic' })!, body, 'chat')
    expect(row.cost_usd).toBe(calcPrice(lib.usage, 'claude-sonnet-4-5-20250929', { providerId: 'anthropic', timestamp: new Date(row.ts) })!.total_price)
  })

  it('a stream with include_usage, cache reads as genai-prices reads them', async () => {
    const model = 'claude-sonnet-4-5-20250929'
    const sse =
      chunk(model, { role: 'assistant', content: 'Hel' }) +
      chunk(model, { content: 'lo' }) +
      chunk(model, null as any, { usage: { prompt_tokens: 5_000, completion_tokens: 40, total_tokens: 5_040, cached_tokens: 4_000 } }) +
      'data: [DONE]\n\n'
    answer(s.upstream, sse, 'sse')
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/anthropic/v1/chat/completions`, { model: 'claude-sonnet-4-5', stream: true, stream_options: { include_usage: true }, messages: [] }, { authorization: 'Bearer sk-ant-compat-000000000001' }),
    )
    expect(row).toMatchObject({ endpoint: 'chat.completions', streamed: 1, input_tokens: 5_000, cache_read_tokens: 4_000, output_tokens: 40, estimated: 0 })
    expect(row.cost_usd).toBe(calcPrice({ input_tokens: 5_000, cache_read_tokens: 4_000, output_tokens: 40 }, model, { providerId: 'anthropic', timestamp: new Date(row.ts) })!.total_price)
  })
})

describe('reasoning tokens reported beside completion_tokens', () => {
  it('xAI: reasoning tokens outside completion_tokens are added to the billed output', async () => {
    // xAI: total_tokens = prompt + completion + reasoning
    const usage = { prompt_tokens: 32, completion_tokens: 9, total_tokens: 135, prompt_tokens_details: { cached_tokens: 6 }, completion_tokens_details: { reasoning_tokens: 94 } }
    answer(s.upstream, completion('grok-3-mini', usage))
    const row = await recorded(s.t, () => postJson(`${s.t.url}/xai/v1/chat/completions`, { model: 'grok-3-mini', messages: [] }, { authorization: 'Bearer xai-test-000000000000001' }))
    expect(row).toMatchObject({ input_tokens: 32, cache_read_tokens: 6, output_tokens: 103, reasoning_tokens: 94 })
    expect(row.cost_usd).toBe(calcPrice({ input_tokens: 32, cache_read_tokens: 6, output_tokens: 103 }, 'grok-3-mini', { providerId: 'x-ai', timestamp: new Date(row.ts) })!.total_price)
  })

  it('OpenAI-style usage (reasoning inside completion_tokens) is not counted twice', async () => {
    const usage = { prompt_tokens: 11, completion_tokens: 228, total_tokens: 239, completion_tokens_details: { reasoning_tokens: 192 } }
    answer(s.upstream, completion('deepseek-reasoner', usage))
    const row = await recorded(s.t, () => postJson(`${s.t.url}/deepseek/v1/chat/completions`, { model: 'deepseek-reasoner', messages: [] }, { authorization: 'Bearer sk-deepseek-00000000001' }))
    expect(row).toMatchObject({ output_tokens: 228, reasoning_tokens: 192 })
  })
})

describe('provider settings', () => {
  it('a provider can be turned off, and given another base URL (with a path)', async () => {
    const other = await startMockUpstream()
    const t2 = await startTestServer(
      { providers: { groq: { enabled: false }, together: { base_url: `${other.url}/proxy/together/v1` } } },
      s.upstream.url,
    )
    try {
      const off = await postJson(`${t2.url}/groq/v1/chat/completions`, { model: 'x', messages: [] })
      expect(off.status).toBe(404)
      expect(off.json().error.type).toBe('not_found')
      expect(off.json().error.message).toContain('providers.groq.enabled')
      expect(s.upstream.requests).toHaveLength(0)

      other.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(completion('meta-llama/Llama-3.3-70B-Instruct-Turbo', { prompt_tokens: 5, completion_tokens: 1 })) }))
      const row = await recorded(t2, () => postJson(`${t2.url}/together/v1/chat/completions`, { model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', messages: [] }))
      expect(other.requests[0].url).toBe('/proxy/together/v1/chat/completions')
      expect(row).toMatchObject({ provider: 'together', input_tokens: 5, output_tokens: 1 })
    } finally {
      await t2.cleanup()
      await other.close()
    }
  })

  it('an unknown provider name in the config is a start-up error naming it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-badprovider-'))
    try {
      await expect(startTestServer({ providers: { grok: { enabled: true } } }, undefined, dir)).rejects.toThrow(/providers\.grok: unknown provider/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
