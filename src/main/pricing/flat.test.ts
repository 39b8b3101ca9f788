import { calcPrice, findProvider, type ModelInfo, type Provider } from '@pydantic/genai-prices'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { flatPrice, flatTable } from './flat'

const PROVIDERS = ['openai', 'anthropic', 'google', 'azure', 'deepseek', 'groq', 'mistral', 'x-ai', 'openrouter', 'together', 'fireworks', 'perplexity', 'cohere', 'aws']

/** Every bundled model the shortcut takes, with its provider. */
function flatModels(): { provider: Provider; model: ModelInfo }[] {
  const out: { provider: Provider; model: ModelInfo }[] = []
  for (const id of PROVIDERS) {
    const provider = findProvider({ providerId: id })
    if (!provider) continue
    for (const model of provider.models) {
      // Only models whose own id their match rule accepts can be asked for by that id.
      if (flatTable(model) && library(provider, model, { input_tokens: 1, output_tokens: 1 }) !== null) out.push({ provider, model })
    }
  }
  return out
}

/** The library's own answer for this one model: a total, or null where it refuses the usage. */
function library(provider: Provider, model: ModelInfo, usage: Record<string, number>): number | null {
  const narrowed: Provider = { ...provider, models: [model], fallback_model_providers: undefined }
  try {
    return calcPrice(usage, model.id, { provider: narrowed })?.total_price ?? null
  } catch {
    return null
  }
}

const count = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 100 }), fc.integer({ min: 0, max: 5_000_000 }))
const usageArb = fc
  .record({ input_tokens: count, output_tokens: count, cache_read_tokens: count, cache_write_tokens: count })
  .map((u) => {
    // As Burnrate hands usage to the library: zero cache counts left out.
    const out: Record<string, number> = { input_tokens: u.input_tokens, output_tokens: u.output_tokens }
    if (u.cache_read_tokens) out.cache_read_tokens = u.cache_read_tokens
    if (u.cache_write_tokens) out.cache_write_tokens = u.cache_write_tokens
    return out
  })

describe('flat-price shortcut', () => {
  const models = flatModels()

  it('takes the common models, and leaves conditional, tiered and modality prices to the library', () => {
    const ids = new Set(models.map((m) => `${m.provider.id}/${m.model.id}`))
    for (const id of ['openai/gpt-4o-mini', 'openai/gpt-4o', 'anthropic/claude-3-5-sonnet', 'anthropic/claude-haiku-4-5', 'anthropic/claude-opus-4-1']) {
      expect([...ids].some((x) => x.startsWith(id)), id).toBe(true)
    }
    expect(models.length).toBeGreaterThan(300)
    const o3 = findProvider({ providerId: 'openai' })!.models.find((m) => m.id === 'o3')!
    expect(Array.isArray(o3.prices)).toBe(true) // priced by date: not taken
    expect(flatTable(o3)).toBeNull()
    expect(flatTable({ id: 'x', match: { equals: 'x' }, prices: { input_mtok: 1, output_mtok: 2, input_audio_mtok: 3 } })).toBeNull()
    expect(flatTable({ id: 'x', match: { equals: 'x' }, prices: { input_mtok: 1, output_mtok: 2, requests_kcount: 3 } })).toBeNull()
  })

  it('gives the library’s total bit for bit, for every model it takes and any token counts', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: models.length - 1 }), usageArb, (i, usage) => {
        const { provider, model } = models[i]
        const fast = flatPrice(flatTable(model)!, usage)
        expect(fast, `${provider.id}/${model.id} ${JSON.stringify(usage)}`).toBe(library(provider, model, usage))
      }),
      { numRuns: 20_000 },
    )
  })

  it('agrees with the library on every model it takes for the usages of the recorded fixtures', () => {
    const usages: Record<string, number>[] = [
      { input_tokens: 1149, output_tokens: 353, cache_read_tokens: 1024 },
      { input_tokens: 506, output_tokens: 153 },
      { input_tokens: 1532, output_tokens: 33, cache_read_tokens: 1111, cache_write_tokens: 418 },
      { input_tokens: 9463, output_tokens: 582, cache_read_tokens: 8320 },
      { input_tokens: 10, output_tokens: 5, cache_read_tokens: 50 }, // more cached than prompt: refused by both
    ]
    for (const { provider, model } of models) {
      for (const usage of usages) expect(flatPrice(flatTable(model)!, usage), `${provider.id}/${model.id}`).toBe(library(provider, model, usage))
    }
  })

  it('steps aside for usage it does not compute', () => {
    const t = flatTable({ id: 'x', match: { equals: 'x' }, prices: { input_mtok: 1, output_mtok: 2, cache_write_1h_mtok: 4, cache_write_mtok: 3 } })!
    expect(flatPrice(t, { input_tokens: 10, output_tokens: 1, cache_write_1h_tokens: 2 })).toBeUndefined()
    expect(flatPrice(t, { input_tokens: 10, output_tokens: 1, web_searches: 1 })).toBeUndefined()
    expect(flatPrice(t, { input_tokens: 1.5, output_tokens: 1 })).toBeUndefined()
  })
})
