import { calcPrice } from '@pydantic/genai-prices'
import { beforeAll, describe, expect, it } from 'vitest'
import { Pricer } from '../pricing/price'
import { loadPriceLibrary } from '../pricing/library'
import { anthropic } from '../providers/anthropic'
import { bedrock } from '../providers/bedrock'
import { converseUsage } from '../providers/bedrock-converse'
import { openai } from '../providers/openai'
import { perplexity } from '../providers/perplexity'
import type { CallContext } from '../proxy/gate'
import { emptyUsage } from '../metering/usage'
import { CallHistory, expectedUsd } from './expected'
import { DEFAULT_MAX_OUTPUT_TOKENS, cacheWriteTtl, maxOutputTokens, promptTokenBound, worstCaseUsd } from './worst-case'

// The price library loads when first needed (../pricing/library.ts); the Pricer refuses to price before.
beforeAll(async () => {
  await loadPriceLibrary()
})

function ctx(body: Record<string, unknown>, endpoint = 'chat.completions'): CallContext {
  const text = JSON.stringify(body)
  return {
    provider: openai,
    shape: { endpoint, model: String(body.model ?? ''), stream: false, billable: endpoint !== 'other' },
    apiKey: 'sk-x', apiKeyHash: 'h', keyHint: '…', tenant: '', agent: '', session: '',
    ts: Date.now(), body, bodyBytes: Buffer.byteLength(text),
  }
}

describe('worst-case cost', () => {
  it('reads every provider spelling of the output cap, times n', () => {
    expect(maxOutputTokens({ max_tokens: 100 })).toBe(100)
    expect(maxOutputTokens({ max_completion_tokens: 200, max_tokens: 100 })).toBe(200)
    expect(maxOutputTokens({ max_output_tokens: 300 })).toBe(300)
    expect(maxOutputTokens({ generationConfig: { maxOutputTokens: 400 } })).toBe(400)
    expect(maxOutputTokens({ max_tokens: 100, n: 3 })).toBe(300)
    expect(maxOutputTokens({})).toBe(DEFAULT_MAX_OUTPUT_TOKENS)
    expect(maxOutputTokens({ max_tokens: -5 })).toBe(DEFAULT_MAX_OUTPUT_TOKENS)
    expect(maxOutputTokens(undefined)).toBe(DEFAULT_MAX_OUTPUT_TOKENS)
  })

  it('bounds the prompt by bytes / 3 (above what a tokenizer counts for text)', () => {
    expect(promptTokenBound(3000)).toBe(1000)
    expect(promptTokenBound(1)).toBe(1)
  })

  it('a call billed with the data-residency premium reserves 1.1x (US-only inference, a Vertex AI region)', () => {
    const c = ctx({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], max_tokens: 1000 })
    const plain = worstCaseUsd(new Pricer(), c)
    expect(plain).toBeGreaterThan(0)
    expect(worstCaseUsd(new Pricer(), { ...c, shape: { ...c.shape, dataResidency: true } })).toBe(plain * 1.1)
  })

  it('a call asking for a fast tier reserves at the model\'s fast price when one is set, else at its Priority price', () => {
    const c = ctx({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], max_tokens: 1000 })
    const fast = { ...c, shape: { ...c.shape, fast: true } }
    const pricer = new Pricer([{ model: 'gpt-4o-mini', speed: 'fast', input_mtok: 1, output_mtok: 4 }])
    expect(worstCaseUsd(pricer, fast)).toBeCloseTo((promptTokenBound(c.bodyBytes) * 1 + 1000 * 4) / 1e6, 15)
    expect(worstCaseUsd(pricer, c)).toBe(worstCaseUsd(new Pricer(), c))
    // No override: OpenAI's published Priority price for gpt-4o-mini, $0.25 input and $1 output.
    expect(worstCaseUsd(new Pricer(), fast)).toBeCloseTo((promptTokenBound(c.bodyBytes) * 0.25 + 1000 * 1) / 1e6, 15)
  })

  it("a request that marks Anthropic's prompt cache reserves its prompt as cache writes (1.25x input; 2x for a 1-hour mark)", () => {
    const mark = (ttl?: string) => ({ type: 'ephemeral', ...(ttl ? { ttl } : {}) })
    const body = (where: 'none' | 'system' | 'message' | 'tools' | 'top', ttl?: string) => ({
      model: 'claude-sonnet-4-5',
      max_tokens: 1000,
      ...(where === 'top' ? { cache_control: mark(ttl) } : {}),
      tools: [{ name: 'read', input_schema: { type: 'object' }, ...(where === 'tools' ? { cache_control: mark(ttl) } : {}) }],
      system: [{ type: 'text', text: 'You are Claude Code.', ...(where === 'system' ? { cache_control: mark(ttl) } : {}) }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'x'.repeat(3000), ...(where === 'message' ? { cache_control: mark(ttl) } : {}) }] }],
    })
    const at = (b: Record<string, unknown>) => ({ ...ctx(b, 'messages'), provider: anthropic })
    const price = (b: Record<string, unknown>, cache: Record<string, number>) => {
      const input_tokens = promptTokenBound(at(b).bodyBytes)
      return Number(calcPrice({ input_tokens, output_tokens: 1000, ...Object.fromEntries(Object.entries(cache).map(([k]) => [k, input_tokens])) }, 'claude-sonnet-4-5', { providerId: 'anthropic' })!.total_price)
    }
    expect(cacheWriteTtl(body('none'))).toBe(null)
    const plain = worstCaseUsd(new Pricer(), at(body('none')))
    expect(plain).toBeCloseTo(price(body('none'), {}), 12)
    for (const where of ['system', 'message', 'tools', 'top'] as const) {
      expect(cacheWriteTtl(body(where))).toBe('5m')
      expect(worstCaseUsd(new Pricer(), at(body(where)))).toBeCloseTo(price(body(where), { cache_write_tokens: 1 }), 12)
      expect(cacheWriteTtl(body(where, '1h'))).toBe('1h')
      const hour = worstCaseUsd(new Pricer(), at(body(where, '1h')))
      expect(hour).toBeCloseTo(price(body(where, '1h'), { cache_write_tokens: 1, cache_write_1h_tokens: 1 }), 12)
      // 2x the input price for the prompt: above the 5-minute bound, which is above the plain one.
      expect(hour).toBeGreaterThan(worstCaseUsd(new Pricer(), at(body(where))))
    }
    expect(worstCaseUsd(new Pricer(), at(body('system')))).toBeGreaterThan(plain)
  })

  it("Bedrock Converse's cachePoint marks count as cache marks: the bound covers the prompt billed as cache writes", () => {
    const MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'
    const body = {
      system: [{ text: 'You are Claude Code. ' + 'x'.repeat(30000) }, { cachePoint: { type: 'default' } }],
      messages: [{ role: 'user', content: [{ text: 'hi' }, { cachePoint: { type: 'default' } }] }],
      toolConfig: { tools: [{ toolSpec: { name: 'read' } }] },
      inferenceConfig: { maxTokens: 1000 },
    }
    const c: CallContext = { ...ctx(body, 'converse'), provider: bedrock, shape: { endpoint: 'converse', model: MODEL, stream: false, billable: true } }
    expect(cacheWriteTtl(body)).toBe('5m')
    expect(cacheWriteTtl({ ...body, system: [{ text: 's' }], messages: [], toolConfig: { tools: [{ cachePoint: { type: 'default' } }] } })).toBe('5m')
    const prompt = promptTokenBound(c.bodyBytes)
    // What the Converse meter records for a call that writes its whole (bounded) prompt to the cache.
    const usage = converseUsage({ inputTokens: 0, cacheWriteInputTokens: prompt, outputTokens: maxOutputTokens(body) })!
    const billed = new Pricer().price('aws', 'bedrock', MODEL, usage, new Date(c.ts))
    expect(billed.priced).toBe(true)
    expect(worstCaseUsd(new Pricer(), c)).toBeGreaterThanOrEqual(billed.cost_usd)
  })

  it('the longest lifetime any mark asks for is the one reserved, wherever it stands', () => {
    const m5 = { type: 'ephemeral' }
    const h1 = { type: 'ephemeral', ttl: '1h' }
    expect(cacheWriteTtl({ cache_control: h1, system: [{ type: 'text', text: 's', cache_control: m5 }], messages: [] })).toBe('1h')
    expect(cacheWriteTtl({ system: [{ type: 'text', text: 's', cache_control: h1 }], messages: [{ role: 'user', content: [{ type: 'text', text: 'x', cache_control: m5 }] }] })).toBe('1h')
    expect(cacheWriteTtl({ system: [{ type: 'text', text: 's', cache_control: m5 }], messages: [{ role: 'user', content: [{ type: 'text', text: 'x', cache_control: h1 }] }] })).toBe('1h')
    expect(cacheWriteTtl({ system: 'plain', messages: [{ role: 'user', content: 'plain' }] })).toBe(null)
  })

  it("a streamed Sonar Pro request for Pro Search reserves Pro Search's request fee; one not streamed, Sonar Pro's standard fee", () => {
    const at = (body: Record<string, unknown>) => {
      const c = ctx(body)
      return { ...c, provider: perplexity, shape: perplexity.inspect({ method: 'POST', path: '/chat/completions', query: '', headers: {}, body }) }
    }
    /** Sonar Pro's standard price of a request's bound (its prompt, 1,000 output tokens) at the low context. */
    const standard = (c: CallContext) =>
      new Pricer().price('perplexity', 'perplexity', 'sonar-pro', { ...emptyUsage(), input_tokens: promptTokenBound(c.bodyBytes), output_tokens: 1000, search_context_size: 'low' }, new Date(c.ts)).cost_usd
    const pro = at({ model: 'sonar-pro', messages: [{ role: 'user', content: 'hello' }], max_tokens: 1000, stream: true, web_search_options: { search_type: 'pro' } })
    expect(pro.shape.proSearch).toBe(true)
    // Pro Search's low-context fee is $14 per 1,000 requests, Sonar Pro's standard one $6.
    expect(worstCaseUsd(new Pricer(), pro)).toBeCloseTo(standard(pro) + (14 - 6) / 1000, 12)
    const notStreamed = at({ ...pro.body, stream: false })
    expect(notStreamed.shape.proSearch).toBeUndefined()
    expect(worstCaseUsd(new Pricer(), notStreamed)).toBe(standard(notStreamed))
  })

  it("an OpenAI Chat Completions search model's call reserves the web search it makes for every answer, at the preview rate", () => {
    const at = (body: Record<string, unknown>) => {
      const c = ctx(body)
      return { ...c, shape: openai.inspect({ method: 'POST', path: '/chat/completions', query: '', headers: {}, body }) }
    }
    const tokens = (c: CallContext, output: number) =>
      calcPrice({ input_tokens: promptTokenBound(c.bodyBytes), output_tokens: output }, 'gpt-4o-mini-search-preview', { providerId: 'openai', timestamp: new Date(c.ts) })!.total_price
    const search = at({ model: 'gpt-4o-mini-search-preview', web_search_options: {}, messages: [{ role: 'user', content: 'hello' }], max_tokens: 1000 })
    expect(search.shape.webSearchEachCall).toBe(true)
    // $25 per 1,000 searches on a non-reasoning model: $0.025 for the one search.
    expect(worstCaseUsd(new Pricer(), search)).toBeCloseTo(tokens(search, 1000) + 0.025, 12)
    // The expected reservation (before any answer: the prompt's bound and 1,000 output tokens here) holds it too, once.
    expect(expectedUsd(new Pricer(), new CallHistory(), search)).toBeCloseTo(tokens(search, 1000) + 0.025, 12)
    const plain = at({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], max_tokens: 1000 })
    expect(plain.shape.webSearchEachCall).toBeUndefined()
    expect(worstCaseUsd(new Pricer(), plain)).toBe(calcPrice({ input_tokens: promptTokenBound(plain.bodyBytes), output_tokens: 1000 }, 'gpt-4o-mini', { providerId: 'openai', timestamp: new Date(plain.ts) })!.total_price)
  })

  it('prices prompt bound and output cap at the model price', () => {
    const c = ctx({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], max_tokens: 1000 })
    const expected = calcPrice({ input_tokens: promptTokenBound(c.bodyBytes), output_tokens: 1000 }, 'gpt-4o-mini', { providerId: 'openai' })!.total_price
    expect(worstCaseUsd(new Pricer(), c)).toBe(expected)
  })

  it('uses config price overrides like the ledger does', () => {
    const pricer = new Pricer([{ model: 'my-model', input_mtok: 1, output_mtok: 2 }])
    const c = ctx({ model: 'my-model', max_tokens: 1_000_000 })
    expect(worstCaseUsd(pricer, c)).toBeCloseTo(2 + promptTokenBound(c.bodyBytes) / 1e6, 12)
  })

  it('is 0 for unpriced models, non-billable endpoints and embeddings output', () => {
    expect(worstCaseUsd(new Pricer(), ctx({ model: 'no-such-model-xyz', max_tokens: 10 }))).toBe(0)
    expect(worstCaseUsd(new Pricer(), ctx({ model: 'gpt-4o-mini' }, 'other'))).toBe(0)
    const emb = ctx({ model: 'text-embedding-3-small', input: 'x'.repeat(300) }, 'embeddings')
    const expected = calcPrice({ input_tokens: promptTokenBound(emb.bodyBytes), output_tokens: 0 }, 'text-embedding-3-small', { providerId: 'openai' })
    expect(worstCaseUsd(new Pricer(), emb)).toBe(expected?.total_price ?? 0)
  })
})
