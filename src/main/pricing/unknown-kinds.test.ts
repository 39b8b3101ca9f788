import { beforeAll, describe, expect, it } from 'vitest'
import { emptyUsage, type Usage } from '../metering/usage'
import { loadPriceLibrary } from './library'
import { Pricer } from './price'

beforeAll(async () => {
  await loadPriceLibrary()
})

const AT = new Date('2026-11-21T20:00:00Z')
const UNPRICED = { cost_usd: 0, priced: false }
const FREE = { cost_usd: 0, priced: true }

function usage(input: number, output: number, extra?: Record<string, number>): Usage {
  return { ...emptyUsage(), input_tokens: input, output_tokens: output, ...(extra ? { extra } : {}) }
}

/**
 * A model the price data lists with an empty price table: free where the data says so, else
 * unknown. Asked twice: the first call finds the model, the second prices from what was remembered.
 */
describe('a model with an empty price table', () => {
  it('the data does not say it is free: a call counting something is unpriced', () => {
    const pricer = new Pricer()
    for (let round = 0; round < 2; round++) {
      expect(pricer.price('cerebras', 'cerebras', 'qwen-3-coder-480b', usage(1200, 340), AT)).toEqual(UNPRICED)
      expect(pricer.price('openrouter', 'openrouter', 'google/lyria-3-pro-preview', usage(40, 0), AT)).toEqual(UNPRICED)
      expect(pricer.price('huggingface_together', 'huggingface', 'servicenow-ai/apriel-1.6-15b-thinker', usage(10, 10), AT)).toEqual(UNPRICED)
    }
  })

  it('the data says it is free (":free", "(free)", "free of charge"): priced at $0', () => {
    const pricer = new Pricer()
    for (let round = 0; round < 2; round++) {
      expect(pricer.price('openrouter', 'openrouter', 'qwen/qwen3-coder:free', usage(1200, 340), AT)).toEqual(FREE)
      expect(pricer.price('google', 'gemini', 'gemma-3-27b-it', usage(1200, 340), AT)).toEqual(FREE)
      expect(pricer.price('google', 'gemini', 'gemma-4-31b-it', usage(1200, 340), AT)).toEqual(FREE)
      expect(pricer.price('openai', 'openai', 'omni-moderation-latest', usage(120, 0), AT)).toEqual(FREE)
    }
  })
})

describe('a model priced for one side of its tokens only', () => {
  it('a call with tokens of the other side is unpriced; one without them stays priced', () => {
    const pricer = new Pricer()
    for (let round = 0; round < 2; round++) {
      expect(pricer.price('azure', 'azure', 'davinci-002', usage(1000, 4000), AT)).toEqual(UNPRICED)
      expect(pricer.price('azure', 'azure', 'babbage-002', usage(1000, 1), AT)).toEqual(UNPRICED)
      expect(pricer.price('azure', 'azure', 'davinci-002', usage(1000, 0), AT)).toEqual({ cost_usd: (1000 * 2) / 1e6, priced: true })
      expect(pricer.price('openai', 'openai', 'text-embedding-3-small', usage(1000, 0), AT)).toEqual({ cost_usd: (1000 * 0.02) / 1e6, priced: true })
    }
  })
})
