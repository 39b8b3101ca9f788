import { calcPrice } from '@pydantic/genai-prices'
import { beforeAll, describe, expect, it } from 'vitest'
import { loadPriceLibrary } from '../pricing/library'
import { Pricer } from '../pricing/price'
import { openaiUsage } from './openai-usage'

beforeAll(async () => {
  await loadPriceLibrary()
})

describe('OpenAI usage: the parts of the prompt cache by modality', () => {
  const at = new Date('2026-11-21T20:00:00Z')
  // The Realtime API's spelling: the cache's own split inside the prompt's details.
  const realtime = (cached: Record<string, number> | undefined) => ({
    input_tokens: 6_000,
    output_tokens: 100,
    input_token_details: { cached_tokens: 2_000, text_tokens: 1_000, audio_tokens: 5_000, ...(cached ? { cached_tokens_details: cached } : {}) },
  })

  it('takes the cached audio the answer names, and prices it at the cached audio rate', () => {
    const u = openaiUsage(realtime({ text_tokens: 500, audio_tokens: 1_500 }))!
    expect(u).toMatchObject({ input_tokens: 6_000, cache_read_tokens: 2_000, extra: { input_audio_tokens: 5_000, cache_audio_read_tokens: 1_500 } })
    const want = calcPrice({ input_tokens: 6_000, output_tokens: 100, cache_read_tokens: 2_000, input_audio_tokens: 5_000, cache_audio_read_tokens: 1_500 }, 'gpt-realtime', { providerId: 'openai', timestamp: at })!
    // gpt-realtime: text $4/M, cached text $0.40/M, audio $32/M, cached audio $0.40/M, output $16/M.
    expect(want.total_price).toBeCloseTo((500 * 4 + 500 * 0.4 + 3_500 * 32 + 1_500 * 0.4 + 100 * 16) / 1e6, 15)
    expect(new Pricer().price('openai', 'openai', 'gpt-realtime', u, at)).toEqual({ cost_usd: want.total_price, priced: true })
  })

  it('counts the cached tokens the answer does not split as text, as far as the prompt has text; ignores a split larger than its whole', () => {
    for (const cached of [undefined, { audio_tokens: 9_000 }]) {
      const u = openaiUsage(realtime(cached))!
      expect(u.extra).toEqual({ input_audio_tokens: 5_000 })
      // 1,000 tokens of text, all cached; the other 1,000 cached tokens are audio.
      const want = calcPrice({ input_tokens: 6_000, output_tokens: 100, cache_read_tokens: 2_000, input_audio_tokens: 5_000, cache_audio_read_tokens: 1_000 }, 'gpt-realtime', { providerId: 'openai', timestamp: at })!
      expect(new Pricer().price('openai', 'openai', 'gpt-realtime', u, at)).toEqual({ cost_usd: want.total_price, priced: true })
      expect(want.total_price).toBeCloseTo((1_000 * 0.4 + 4_000 * 32 + 1_000 * 0.4 + 100 * 16) / 1e6, 15)
    }
    // A cache smaller than the prompt's text: none of the audio cached.
    const small = openaiUsage({ ...realtime(undefined), input_token_details: { cached_tokens: 800, audio_tokens: 5_000 } })!
    const want = calcPrice({ input_tokens: 6_000, output_tokens: 100, cache_read_tokens: 800, input_audio_tokens: 5_000, cache_audio_read_tokens: 0 }, 'gpt-realtime', { providerId: 'openai', timestamp: at })!
    expect(new Pricer().price('openai', 'openai', 'gpt-realtime', small, at)).toEqual({ cost_usd: want.total_price, priced: true })
    expect(want.total_price).toBeCloseTo((200 * 4 + 800 * 0.4 + 5_000 * 32 + 100 * 16) / 1e6, 15)
  })

  it("reads the Realtime API's output split (`output_token_details`, singular) and prices its audio at the audio output rate", () => {
    // OpenAI's own example of a response.done usage (the Realtime costs guide).
    const u = openaiUsage({
      total_tokens: 253,
      input_tokens: 132,
      output_tokens: 121,
      input_token_details: { text_tokens: 119, audio_tokens: 13, image_tokens: 0, cached_tokens: 64, cached_tokens_details: { text_tokens: 64, audio_tokens: 0, image_tokens: 0 } },
      output_token_details: { text_tokens: 30, audio_tokens: 91 },
    })!
    expect(u).toMatchObject({ input_tokens: 132, output_tokens: 121, cache_read_tokens: 64, extra: { input_audio_tokens: 13, output_audio_tokens: 91 } })
    // gpt-realtime: text in $4/M, cached text $0.40/M, audio in $32/M, text out $16/M, audio out $64/M.
    const cost = new Pricer().price('openai', 'openai', 'gpt-realtime', u, at)
    expect(cost.priced).toBe(true)
    expect(cost.cost_usd).toBeCloseTo((55 * 4 + 64 * 0.4 + 13 * 32 + 30 * 16 + 91 * 64) / 1e6, 15)
  })
})
