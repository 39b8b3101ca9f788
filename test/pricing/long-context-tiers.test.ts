import { calcPrice, extractUsage, findProvider } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, recorded } from '../providers/ledger'

/**
 * Long-context tiers are decided on the whole prompt, as the providers bill it: for Claude the
 * uncached input plus cache reads plus cache writes (Anthropic reports the three apart), for
 * OpenAI `prompt_tokens` (cached tokens are part of it). Each call is checked against the sum by
 * hand and against genai-prices' own reading (`extractUsage`) of the same answer.
 */

const s = serverOverMockUpstream()

describe('long-context tiers', () => {
  it('Claude Sonnet 4.5: 1,000 new input tokens over a 250k cache read is the >200k tier, 1-hour writes at their own rate', async () => {
    const usage = {
      input_tokens: 1_000,
      cache_read_input_tokens: 250_000,
      cache_creation_input_tokens: 5_000,
      cache_creation: { ephemeral_5m_input_tokens: 3_000, ephemeral_1h_input_tokens: 2_000 },
      output_tokens: 500,
    }
    const body = { id: 'msg_tier', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [{ type: 'text', text: 'ok' }], usage }
    answer(s.upstream, body)
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, { 'x-api-key': 'sk-ant-tier-00000000000001' }),
    )
    expect(row).toMatchObject({ input_tokens: 256_000, cache_read_tokens: 250_000, cache_write_tokens: 5_000, cache_write_1h_tokens: 2_000, output_tokens: 500 })
    // Above 200k: $6 input, $0.60 cache read, $7.50 5-minute write, $12 1-hour write, $22.50 output per million.
    expect(row.cost_usd).toBeCloseTo((1_000 * 6 + 250_000 * 0.6 + 3_000 * 7.5 + 2_000 * 12 + 500 * 22.5) / 1e6, 12)
    const lib = extractUsage(findProvider({ providerId: 'anthropic' })!, body)
    expect(row.cost_usd).toBe(calcPrice(lib.usage, 'claude-sonnet-4-5-20250929', { providerId: 'anthropic', timestamp: new Date(row.ts) })!.total_price)
  })

  it('Claude Sonnet 4.5: the same call with 190k cached stays at the base rates', async () => {
    const usage = { input_tokens: 1_000, cache_read_input_tokens: 190_000, cache_creation_input_tokens: 0, output_tokens: 500 }
    answer(s.upstream, { id: 'msg_tier2', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [], usage })
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [] }, { 'x-api-key': 'sk-ant-tier-00000000000001' }),
    )
    expect(row.cost_usd).toBeCloseTo((1_000 * 3 + 190_000 * 0.3 + 500 * 15) / 1e6, 12)
  })

  it('GPT-5.4: a 272k prompt, mostly cached, is the long-context tier; one token less is not', async () => {
    const at = async (prompt: number) => {
      const usage = { prompt_tokens: prompt, completion_tokens: 1_000, total_tokens: prompt + 1_000, prompt_tokens_details: { cached_tokens: 200_000 }, completion_tokens_details: { reasoning_tokens: 800 } }
      const body = { id: 'chatcmpl-tier', object: 'chat.completion', created: 1763700000, model: 'gpt-5.4', choices: [], usage }
      answer(s.upstream, body)
      const row = await recorded(s.t, () => postJson(`${s.t.url}/v1/chat/completions`, { model: 'gpt-5.4', messages: [] }, { authorization: 'Bearer sk-tier-000000000000000001' }))
      const lib = extractUsage(findProvider({ providerId: 'openai' })!, body, 'chat')
      expect(row.cost_usd).toBe(calcPrice(lib.usage, 'gpt-5.4', { providerId: 'openai', timestamp: new Date(row.ts) })!.total_price)
      return row
    }
    const long = await at(272_000)
    expect(long).toMatchObject({ input_tokens: 272_000, cache_read_tokens: 200_000, output_tokens: 1_000, reasoning_tokens: 800 })
    // Long context: $5 input, $0.50 cached, $22.50 output per million.
    expect(long.cost_usd).toBeCloseTo((72_000 * 5 + 200_000 * 0.5 + 1_000 * 22.5) / 1e6, 12)
    const short = await at(271_999)
    expect(short.cost_usd).toBeCloseTo((71_999 * 2.5 + 200_000 * 0.25 + 1_000 * 15) / 1e6, 12)
  })
})
