import { calcPrice } from '@pydantic/genai-prices'
import { beforeAll, describe, expect, it } from 'vitest'
import { Pricer } from '../pricing/price'
import { loadPriceLibrary } from '../pricing/library'
import { openai } from '../providers/openai'
import type { CallContext } from '../proxy/gate'
import { DEFAULT_MAX_OUTPUT_TOKENS, maxOutputTokens, promptTokenBound, worstCaseUsd } from './worst-case'

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

  it('a call asking for a fast tier reserves at the model\'s fast price when one is set, else at its standard price', () => {
    const c = ctx({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], max_tokens: 1000 })
    const fast = { ...c, shape: { ...c.shape, fast: true } }
    const pricer = new Pricer([{ model: 'gpt-4o-mini', speed: 'fast', input_mtok: 1, output_mtok: 4 }])
    expect(worstCaseUsd(pricer, fast)).toBeCloseTo((promptTokenBound(c.bodyBytes) * 1 + 1000 * 4) / 1e6, 15)
    expect(worstCaseUsd(pricer, c)).toBe(worstCaseUsd(new Pricer(), c))
    expect(worstCaseUsd(new Pricer(), fast)).toBe(worstCaseUsd(new Pricer(), c))
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
