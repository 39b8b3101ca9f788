import type { ModelInfo } from '@pydantic/genai-prices'
import { beforeAll, describe, expect, it } from 'vitest'
import { emptyUsage, type Usage } from '../metering/usage'
import { loadPriceLibrary } from './library'
import { withAudioPrices } from './openai-audio-prices'
import { Pricer } from './price'

beforeAll(async () => {
  await loadPriceLibrary()
})

const NOW = new Date('2026-11-21T20:00:00Z')

/** 1,000 prompt tokens of which 800 audio, 500 output tokens of which 400 audio. */
function audioCall(): Usage {
  return { ...emptyUsage(), input_tokens: 1000, output_tokens: 500, extra: { input_audio_tokens: 800, output_audio_tokens: 400 } }
}
/** The hand-computed cost of `audioCall` at these per-1M prices: text in, audio in, text out, audio out. */
const cost = (textIn: number, audioIn: number, textOut: number, audioOut: number) => (200 * textIn + 800 * audioIn + 100 * textOut + 400 * audioOut) / 1e6

describe('OpenAI audio prices the data lacks', () => {
  it('prices the audio tokens of gpt-4o-audio-preview and its mini at OpenAI\'s audio rates, by snapshot and date', () => {
    const pricer = new Pricer()
    for (let round = 0; round < 2; round++) {
      expect(pricer.price('openai', 'openai', 'gpt-4o-audio-preview-2024-12-17', audioCall(), NOW).cost_usd).toBeCloseTo(cost(2.5, 40, 10, 80), 12)
      expect(pricer.price('openai', 'openai', 'gpt-4o-audio-preview-2025-06-03', audioCall(), NOW).cost_usd).toBeCloseTo(cost(2.5, 40, 10, 80), 12)
      expect(pricer.price('openai', 'openai', 'gpt-4o-audio-preview-2024-10-01', audioCall(), NOW).cost_usd).toBeCloseTo(cost(2.5, 100, 10, 200), 12)
      expect(pricer.price('openai', 'openai', 'gpt-4o-mini-audio-preview', audioCall(), NOW).cost_usd).toBeCloseTo(cost(0.15, 10, 0.6, 20), 12)
      expect(pricer.price('openai', 'openai', 'gpt-4o-mini-audio-preview-2024-12-17', audioCall(), NOW).cost_usd).toBeCloseTo(cost(0.15, 10, 0.6, 20), 12)
      // The name without a date: the first snapshot's prices until Dec 17, 2024, the later ones' since.
      expect(pricer.price('openai', 'openai', 'gpt-4o-audio-preview', audioCall(), new Date('2024-11-01T12:00:00Z')).cost_usd).toBeCloseTo(cost(2.5, 100, 10, 200), 12)
      expect(pricer.price('openai', 'openai', 'gpt-4o-audio-preview', audioCall(), NOW).cost_usd).toBeCloseTo(cost(2.5, 40, 10, 80), 12)
    }
    // A text-only call is priced at the text rates, as before.
    const text = { ...emptyUsage(), input_tokens: 1000, output_tokens: 500 }
    expect(pricer.price('openai', 'openai', 'gpt-4o-audio-preview', text, NOW)).toEqual({ cost_usd: (1000 * 2.5 + 500 * 10) / 1e6, priced: true })
  })

  it('Azure (or a snapshot not listed), whose audio price is not known: a call with audio tokens is unpriced, one without stays priced', () => {
    const pricer = new Pricer()
    for (let round = 0; round < 2; round++) {
      expect(pricer.price('azure', 'azure', 'gpt-4o-audio-preview', audioCall(), NOW)).toEqual({ cost_usd: 0, priced: false })
      expect(pricer.price('azure', 'azure', 'gpt-4o-mini-audio-preview-2024-12-17', audioCall(), NOW)).toEqual({ cost_usd: 0, priced: false })
    }
    expect(pricer.price('azure', 'azure', 'gpt-4o-audio-preview', { ...emptyUsage(), input_tokens: 1000, output_tokens: 500 }, NOW).priced).toBe(true)
    // An OpenAI snapshot not listed that the data prices as gpt-4o-audio-preview: its audio price is not known either.
    expect(pricer.price('openai', 'openai', 'gpt-4o-audio-preview-2099-01-01', audioCall(), NOW)).toEqual({ cost_usd: 0, priced: false })
    // The models whose audio prices the data has are priced by them, under Azure too.
    expect(pricer.price('azure', 'azure', 'gpt-realtime', audioCall(), NOW).cost_usd).toBeCloseTo(cost(4, 32, 16, 64), 12)
  })

  it('a pricing.overrides entry wins', () => {
    const pricer = new Pricer([{ model: 'gpt-4o-audio-preview-2024-12-17', input_mtok: 3, output_mtok: 12 }])
    expect(pricer.price('openai', 'openai', 'gpt-4o-audio-preview-2024-12-17', audioCall(), NOW).cost_usd).toBeCloseTo((1000 * 3 + 500 * 12) / 1e6, 12)
  })

  it('keeps an audio price the data has (a later price update), per date and per side', () => {
    const flat: ModelInfo = { id: 'gpt-4o-audio-preview', match: { starts_with: 'gpt-4o-audio-preview' }, prices: { input_mtok: 2.5, output_mtok: 10, input_audio_mtok: 41 } }
    expect(withAudioPrices('openai', 'gpt-4o-audio-preview-2024-12-17', flat).prices).toEqual({ input_mtok: 2.5, output_mtok: 10, input_audio_mtok: 41, output_audio_mtok: 80 })
    const full: ModelInfo = { ...flat, prices: { input_mtok: 2.5, output_mtok: 10, input_audio_mtok: 41, output_audio_mtok: 81 } }
    expect(withAudioPrices('openai', 'gpt-4o-audio-preview', full)).toBe(full)
    expect(withAudioPrices('azure', 'gpt-4o-audio-preview', flat)).toBe(flat)
    expect(withAudioPrices('openai', 'gpt-4o', flat)).toBe(flat)
    // Dated data: each of its prices takes the audio price of its date, and ours starts on its own.
    const dated: ModelInfo = {
      ...flat,
      prices: [{ prices: { input_mtok: 2.5, output_mtok: 10 } }, { constraint: { type: 'start_date', start_date: '2025-03-01' }, prices: { input_mtok: 2, output_mtok: 8 } }],
    }
    expect(withAudioPrices('openai', 'gpt-4o-audio-preview', dated).prices).toEqual([
      { prices: { input_mtok: 2.5, output_mtok: 10, input_audio_mtok: 100, output_audio_mtok: 200 } },
      { constraint: { type: 'start_date', start_date: '2024-12-17' }, prices: { input_mtok: 2.5, output_mtok: 10, input_audio_mtok: 40, output_audio_mtok: 80 } },
      { constraint: { type: 'start_date', start_date: '2025-03-01' }, prices: { input_mtok: 2, output_mtok: 8, input_audio_mtok: 40, output_audio_mtok: 80 } },
    ])
  })
})
