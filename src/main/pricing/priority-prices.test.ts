import { describe, expect, it } from 'vitest'
import { type ModelInfo, findProvider } from '@pydantic/genai-prices'
import { GEMINI_PRIORITY_MULTIPLES } from './gemini-priority'
import { hasPriorityPrices, priorityPrice, withPriorityPrices } from './priority-prices'

describe('OpenAI Priority prices', () => {
  it('names a listed model by its own name or a dated snapshot of it, on OpenAI only', () => {
    expect(priorityPrice('openai', 'gpt-5-2025-08-07')).toEqual({ input_mtok: 2.5, cache_read_mtok: 0.25, output_mtok: 20 })
    expect(priorityPrice('openai', 'gpt-4o-2024-05-13')).toEqual({ input_mtok: 8.75, output_mtok: 26.25 })
    expect(priorityPrice('openai', 'gpt-4o-2024-11-20')?.input_mtok).toBe(4.25)
    expect(priorityPrice('openai', 'gpt-5-nano')).toBeUndefined()
    expect(priorityPrice('openai', 'gpt-5.6-sol')).toBeUndefined()
    expect(priorityPrice('azure', 'gpt-5')).toBeUndefined()
  })

  it('replaces the token prices of every dated price, long-context tiers included, and keeps the per-call fees', () => {
    const table: ModelInfo = {
      id: 'gpt-5.4',
      match: { equals: 'gpt-5.4' },
      prices: [
        { prices: { input_mtok: { base: 2.5, tiers: [{ start: 271999, price: 5 }] }, cache_read_mtok: 0.25, output_mtok: 15, web_searches_kcount: 10 } },
        { constraint: { type: 'start_date', start_date: '2026-06-01' }, prices: { input_mtok: 2, output_mtok: 12 } },
      ],
    } as ModelInfo
    const p = withPriorityPrices('openai', 'openai', 'gpt-5.4', table)!.prices as { prices: Record<string, unknown> }[]
    expect(p[0]!.prices).toEqual({ input_mtok: 5, cache_read_mtok: 0.5, output_mtok: 30, web_searches_kcount: 10 })
    expect(p[1]!.prices).toEqual({ input_mtok: 5, cache_read_mtok: 0.5, output_mtok: 30 })
    expect(withPriorityPrices('openai', 'openai', 'gpt-5-nano', table)).toBeNull()
  })
})

describe("The Gemini API's Priority prices", () => {
  const table = {
    id: 'gemini-3.8-flash',
    match: { starts_with: 'gemini-3.8-flash' },
    prices: [
      { prices: { input_mtok: { base: 1, tiers: [{ start: 200000, price: 2 }] }, cache_read_mtok: 0.1, output_mtok: 4, input_audio_mtok: 3, requests_kcount: 5 } },
      { constraint: { type: 'start_date', start_date: '2027-01-01' }, prices: { input_mtok: 1.5, output_mtok: 7.5 } },
    ],
  } as ModelInfo

  it('are 1.8x every token price of every dated price, long-context tiers included; per-call prices kept', () => {
    const p = withPriorityPrices('google', 'gemini', 'gemini-3.8-flash-001', table)!.prices as { prices: Record<string, unknown> }[]
    expect(p[0]!.prices).toEqual({ input_mtok: { base: 1 * 1.8, tiers: [{ start: 200000, price: 2 * 1.8 }] }, cache_read_mtok: 0.1 * 1.8, output_mtok: 4 * 1.8, input_audio_mtok: 3 * 1.8, requests_kcount: 5 })
    expect(p[1]!.prices).toEqual({ input_mtok: 1.5 * 1.8, output_mtok: 7.5 * 1.8 })
  })

  it("are the Gemini API's only: Vertex AI's Priority PayGo and models Google gives no multiple for have none", () => {
    expect(withPriorityPrices('google', 'vertex', 'gemini-3.8-flash', table)).toBeNull()
    expect(withPriorityPrices('google', 'gemini', 'gemini-2.5-flash', { ...table, id: 'gemini-2.5-flash' })).toBeNull()
    expect(hasPriorityPrices('google', 'gemini', 'gemini-3.8-flash-001', 'gemini-3.8-flash')).toBe(true)
    expect(hasPriorityPrices('google', 'vertex', 'gemini-3.8-flash', 'gemini-3.8-flash')).toBe(false)
    expect(hasPriorityPrices('google', 'gemini', 'gemini-3.8-flash', undefined)).toBe(false)
    expect(hasPriorityPrices('openai', 'openai', 'gpt-5-2025-08-07', 'gpt-5')).toBe(true)
  })

  it("carry the multiple the price data's comment gives for each Google model that names one", () => {
    const google = findProvider({ providerId: 'google' })!
    const named = new Map<string, number>()
    for (const m of google.models) {
      const said = /Priority tier is ([\d.]+)x/.exec(m.price_comments ?? '')
      if (said) named.set(m.id, Number(said[1]))
    }
    expect(named.size).toBeGreaterThan(0)
    expect(Object.fromEntries(named)).toEqual(GEMINI_PRIORITY_MULTIPLES)
  })
})
