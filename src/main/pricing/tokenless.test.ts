import { calcPrice } from '@pydantic/genai-prices'
import { beforeAll, describe, expect, it } from 'vitest'
import { emptyUsage, type Usage } from '../metering/usage'
import { loadPriceLibrary } from './library'
import { Pricer } from './price'

beforeAll(async () => {
  await loadPriceLibrary()
})

const AT = new Date('2026-11-21T20:00:00Z')
const UNPRICED = { cost_usd: 0, priced: false }

function usage(input: number, output: number, extra?: Record<string, number>): Usage {
  return { ...emptyUsage(), input_tokens: input, output_tokens: output, ...(extra ? { extra } : {}) }
}

/**
 * A model the price data knows whose prices have no token price (xAI's grok-voice: audio hours and
 * text messages; whisper-1 and gpt-transcribe: audio hours; Mistral's OCR: pages): a call of it
 * with tokens and nothing the data prices is unpriced, not free. Asked twice: the first call finds
 * the model, the second prices from what was remembered.
 */
describe('a model whose price data has no token prices', () => {
  it('a call with tokens and nothing else priced is recorded unpriced, not at a priced $0', () => {
    const pricer = new Pricer()
    for (let round = 0; round < 2; round++) {
      expect(pricer.price('x-ai', 'xai', 'grok-voice-latest', usage(1200, 340), AT)).toEqual(UNPRICED)
      expect(pricer.price('x-ai', 'xai', 'grok-voice-think-fast-1.0', usage(50, 0), AT)).toEqual(UNPRICED)
      expect(pricer.price('openai', 'openai', 'gpt-transcribe', usage(14, 45, { input_audio_tokens: 10 }), AT)).toEqual(UNPRICED)
      expect(pricer.price('openai', 'openai', 'whisper-1', usage(14, 45), AT)).toEqual(UNPRICED)
      expect(pricer.price('mistral', 'mistral', 'mistral-ocr-latest', usage(900, 3000), AT)).toEqual(UNPRICED)
    }
  })

  it('keeps pricing what it was billed for that the data prices (seconds, pages), tokens beside them or not', () => {
    const pricer = new Pricer()
    for (let round = 0; round < 2; round++) {
      const seconds = calcPrice({ audio_seconds: 95 }, 'whisper-1', { providerId: 'openai', timestamp: AT })!.total_price
      expect(seconds).toBeGreaterThan(0)
      expect(pricer.price('openai', 'openai', 'whisper-1', usage(0, 0, { audio_seconds: 95 }), AT)).toEqual({ cost_usd: seconds, priced: true })
      expect(pricer.price('openai', 'openai', 'whisper-1', usage(14, 45, { audio_seconds: 95 }), AT)).toEqual({ cost_usd: seconds, priced: true })
      const pages = calcPrice({ input_document_pages: 3 }, 'mistral-ocr-latest', { providerId: 'mistral', timestamp: AT })!.total_price
      expect(pages).toBeGreaterThan(0)
      expect(pricer.price('mistral', 'mistral', 'mistral-ocr-latest', usage(900, 3000, { input_document_pages: 3 }), AT)).toEqual({ cost_usd: pages, priced: true })
    }
  })

  it('a model the data gives as free (no prices at all) stays priced at $0', () => {
    const pricer = new Pricer()
    for (let round = 0; round < 2; round++) {
      expect(pricer.price('openrouter', 'openrouter', 'meta-llama/llama-3.3-70b-instruct:free', usage(1200, 340), AT)).toEqual({ cost_usd: 0, priced: true })
      expect(pricer.price('openai', 'openai', 'omni-moderation-latest', usage(120, 0), AT)).toEqual({ cost_usd: 0, priced: true })
    }
  })
})
