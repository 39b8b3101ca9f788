import { findProvider } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { fixtureJson } from '../support/fixtures'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, recorded } from './ledger'

/**
 * OpenAI bills the audio tokens of gpt-4o-audio-preview and gpt-4o-mini-audio-preview far above
 * their text tokens ($40 / $80 per 1M against $2.50 / $10; the mini's $10 / $20 against $0.15 /
 * $0.60). The price data has their text prices only, and the library priced their audio at the
 * text rate: a call with audio was recorded at about a tenth of its bill. The answer is a Chat
 * Completions audio answer (test/fixtures/openai-chat/chat-nonstream-audio.json: prompt 1,062 =
 * text 22 + audio 1,040; completion 534 = text 114 + audio 420), through the proxy into its ledger.
 */
const s = serverOverMockUpstream({ pricing: { overrides: [{ model: 'gpt-4o-mini-audio-preview-2024-12-17', provider: 'openai', input_mtok: 0.2, output_mtok: 0.8 }] } })

const AUDIO_ANSWER = fixtureJson('openai-chat/chat-nonstream-audio.json') as { model: string }
const REQUEST = { modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' }, messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } }] }] }

/** The data's prices of a model (the premise of these tests). */
function dataPrices(providerId: string, id: string): unknown {
  return findProvider({ providerId })?.models.find((m) => m.id === id)?.prices
}

async function chat(url: string, model: string, headers: Record<string, string>) {
  answer(s.upstream, { ...AUDIO_ANSWER, model })
  return recorded(s.t, async () => {
    const r = await postJson(url, { model, ...REQUEST }, headers)
    expect(r.status).toBe(200)
  })
}

const openai = (model: string) => chat(`${s.t.url}/openai/v1/chat/completions`, model, { authorization: 'Bearer sk-test-openai-audio-000000001' })

describe('a Chat Completions call with audio tokens', () => {
  it('is priced at OpenAI\'s audio rates for its audio, text rates for its text', async () => {
    expect(dataPrices('openai', 'gpt-4o-audio-preview')).toEqual({ input_mtok: 2.5, output_mtok: 10 })
    expect(dataPrices('openai', 'gpt-4o-mini-audio-preview')).toEqual({ input_mtok: 0.15, output_mtok: 0.6 })

    const row = await openai('gpt-4o-audio-preview-2024-12-17')
    expect(row).toMatchObject({ provider: 'openai', model: 'gpt-4o-audio-preview-2024-12-17', input_tokens: 1062, output_tokens: 534, priced: 1 })
    expect(JSON.parse(row.usage_extra).extra).toEqual({ input_audio_tokens: 1040, output_audio_tokens: 420 })
    // Text in 22 at $2.50, audio in 1,040 at $40, text out 114 at $10, audio out 420 at $80 per 1M:
    // $0.076395 (the text rates alone gave $0.007995).
    expect(row.cost_usd).toBeCloseTo((22 * 2.5 + 1040 * 40 + 114 * 10 + 420 * 80) / 1e6, 12)

    // The name without a date, called today: the same prices.
    expect((await openai('gpt-4o-audio-preview')).cost_usd).toBeCloseTo(0.076395, 12)
    // The first snapshot: audio $100 in, $200 out.
    expect((await openai('gpt-4o-audio-preview-2024-10-01')).cost_usd).toBeCloseTo((22 * 2.5 + 1040 * 100 + 114 * 10 + 420 * 200) / 1e6, 12)
    // The mini: text $0.15 / $0.60, audio $10 / $20.
    expect((await openai('gpt-4o-mini-audio-preview')).cost_usd).toBeCloseTo((22 * 0.15 + 1040 * 10 + 114 * 0.6 + 420 * 20) / 1e6, 12)
  })

  it('a pricing.overrides entry for the model wins (per token, as README says)', async () => {
    const row = await openai('gpt-4o-mini-audio-preview-2024-12-17')
    expect(row).toMatchObject({ model: 'gpt-4o-mini-audio-preview-2024-12-17', priced: 1 })
    expect(row.cost_usd).toBeCloseTo((1062 * 0.2 + 534 * 0.8) / 1e6, 12)
  })

  it('through Azure OpenAI, whose audio price is not known: recorded unpriced, tokens kept', async () => {
    const row = await chat(`${s.t.url}/azure/openai/deployments/audio/chat/completions?api-version=2025-01-01-preview`, 'gpt-4o-audio-preview-2024-12-17', { 'api-key': 'azure-test-key-audio-000000001' })
    expect(row).toMatchObject({ provider: 'azure', model: 'gpt-4o-audio-preview-2024-12-17', input_tokens: 1062, output_tokens: 534, priced: 0, cost_usd: 0 })
    expect(JSON.parse(row.usage_extra).extra).toEqual({ input_audio_tokens: 1040, output_audio_tokens: 420 })
  })
})
