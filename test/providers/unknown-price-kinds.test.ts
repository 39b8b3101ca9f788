import { findProvider } from '@pydantic/genai-prices'
import { beforeEach, describe, expect, it } from 'vitest'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, recorded } from './ledger'

/**
 * Models the price data lists with an empty price table (`prices: {}`) without saying they are
 * free: the library prices their calls at $0. OpenRouter bills Lyria 3 Clip per clip ($0.04), and
 * Cerebras billed qwen-3-coder-480b per token (the data keeps it "to help with tests"). Their calls
 * are recorded unpriced, tokens kept, never as free; a model the data says is free (`:free`) stays
 * priced at $0.
 */
const s = serverOverMockUpstream()
beforeEach(() => {
  s.upstream.requests.length = 0
})

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

function tableOf(providerId: string, model: string): unknown {
  return findProvider({ providerId })?.models.find((m) => m.id === model)?.prices
}

async function chat(provider: string, model: string, usage: Record<string, unknown>) {
  answer(s.upstream, completion(model, usage))
  return recorded(s.t, async () => {
    const r = await postJson(`${s.t.url}/${provider}/v1/chat/completions`, { model, messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer sk-${provider}-test-key-00000007` })
    expect(r.status).toBe(200)
  })
}

describe('a model whose price data is an empty table', () => {
  it('the data does not say free: recorded unpriced with its tokens, not priced at $0', async () => {
    // What the bundled data holds (the premise of this test).
    expect(tableOf('cerebras', 'qwen-3-coder-480b')).toEqual({})
    expect(tableOf('openrouter', 'google/lyria-3-clip-preview')).toEqual({})
    const cerebras = await chat('cerebras', 'qwen-3-coder-480b', { prompt_tokens: 1200, completion_tokens: 300, total_tokens: 1500 })
    expect(cerebras).toMatchObject({ provider: 'cerebras', model: 'qwen-3-coder-480b', input_tokens: 1200, output_tokens: 300, priced: 0, cost_usd: 0 })
    // OpenRouter's own charge wins when it sends one; this answer has none.
    const lyria = await chat('openrouter', 'google/lyria-3-clip-preview', { prompt_tokens: 40, completion_tokens: 2000, total_tokens: 2040 })
    expect(lyria).toMatchObject({ provider: 'openrouter', model: 'google/lyria-3-clip-preview', input_tokens: 40, output_tokens: 2000, priced: 0, cost_usd: 0 })
  })

  it('the data says free: priced at $0', async () => {
    expect(tableOf('openrouter', 'meta-llama/llama-3.3-70b-instruct:free')).toEqual({})
    const row = await chat('openrouter', 'meta-llama/llama-3.3-70b-instruct:free', { prompt_tokens: 1200, completion_tokens: 300, total_tokens: 1500 })
    expect(row).toMatchObject({ model: 'meta-llama/llama-3.3-70b-instruct:free', input_tokens: 1200, output_tokens: 300, priced: 1, cost_usd: 0 })
  })
})

/**
 * A model whose prices have a token price for one side only: Azure's davinci-002 and babbage-002
 * have an input price and no output price in the data, and Azure bills "both input and output"
 * tokens for them (learn.microsoft.com, Azure OpenAI's manage-costs page). The library prices the
 * output tokens at $0; the call is recorded unpriced, not priced at its input alone.
 */
describe('a model priced for its input tokens only, with output tokens', () => {
  it('is recorded unpriced with its tokens', async () => {
    expect(tableOf('azure', 'davinci')).toEqual({ input_mtok: 2 })
    answer(s.upstream, {
      id: 'cmpl-1',
      object: 'text_completion',
      created: 1763700000,
      model: 'davinci-002',
      choices: [{ text: ' world', index: 0, logprobs: null, finish_reason: 'length' }],
      usage: { prompt_tokens: 1000, completion_tokens: 4000, total_tokens: 5000 },
    })
    const row = await recorded(s.t, async () => {
      const r = await postJson(`${s.t.url}/azure/openai/deployments/davinci-002/completions?api-version=2024-10-21`, { prompt: 'hello', max_tokens: 4000 }, { 'api-key': 'azure-test-key-0000000000007' })
      expect(r.status).toBe(200)
    })
    expect(row).toMatchObject({ provider: 'azure', model: 'davinci-002', endpoint: 'completions', input_tokens: 1000, output_tokens: 4000, priced: 0, cost_usd: 0 })
  })

  it('one with no output tokens (an embedding) stays priced', async () => {
    answer(s.upstream, { object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2] }], model: 'text-embedding-ada-002', usage: { prompt_tokens: 1000, total_tokens: 1000 } })
    const row = await recorded(s.t, async () => {
      const r = await postJson(`${s.t.url}/azure/openai/deployments/ada/embeddings?api-version=2024-10-21`, { input: 'hello' }, { 'api-key': 'azure-test-key-0000000000007' })
      expect(r.status).toBe(200)
    })
    expect(row).toMatchObject({ provider: 'azure', model: 'text-embedding-ada-002', input_tokens: 1000, output_tokens: 0, priced: 1 })
    expect(row.cost_usd).toBeGreaterThan(0)
  })
})
