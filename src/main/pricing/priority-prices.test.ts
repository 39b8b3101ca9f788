import { describe, expect, it } from 'vitest'
import type { ModelInfo } from '@pydantic/genai-prices'
import { priorityPrice, withPriorityPrices } from './priority-prices'

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
    const p = withPriorityPrices('openai', 'gpt-5.4', table)!.prices as { prices: Record<string, unknown> }[]
    expect(p[0]!.prices).toEqual({ input_mtok: 5, cache_read_mtok: 0.5, output_mtok: 30, web_searches_kcount: 10 })
    expect(p[1]!.prices).toEqual({ input_mtok: 5, cache_read_mtok: 0.5, output_mtok: 30 })
    expect(withPriorityPrices('openai', 'gpt-5-nano', table)).toBeNull()
  })
})
