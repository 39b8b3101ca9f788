import { findProvider } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { unpricedUses, withPreviewSearchFee, withToolFees } from './tool-fees'

/** The bundled price data's table of `model` under `providerId`. */
function table(providerId: string, model: string) {
  const m = findProvider({ providerId })!.models.find((x) => x.id === model)
  expect(m, `${providerId} ${model}`).toBeDefined()
  return m!
}
const prices = (m: ReturnType<typeof table>) => (Array.isArray(m.prices) ? m.prices.map((c) => c.prices) : [m.prices])

describe('tool fees the price data lacks', () => {
  it("gives an OpenAI model lacking them OpenAI's $10 web search and $2.50 file search, per 1,000, and keeps the data's own", () => {
    const dr = table('openai', 'o3-deep-research')
    expect(unpricedUses(dr)).toEqual(['web_searches', 'storage_searches'])
    const fed = withToolFees('openai', dr)
    for (const p of prices(fed)) expect(p).toMatchObject({ web_searches_kcount: 10, storage_searches_kcount: 2.5 })
    expect(unpricedUses(fed)).toEqual([])
    expect(withToolFees('azure', dr)).not.toBe(dr)
    const gpt5 = table('openai', 'gpt-5')
    expect(withToolFees('openai', gpt5)).toBe(gpt5)
  })

  it("gives a Claude model under Anthropic's data its $10 web search, and leaves Vertex AI's and Bedrock's tables as they are", () => {
    const haiku3 = table('anthropic', 'claude-3-haiku')
    for (const p of prices(withToolFees('anthropic', haiku3))) expect(p.web_searches_kcount).toBe(10)
    const vertex = table('google', 'claude-sonnet-4-5')
    expect(withToolFees('google', vertex)).toBe(vertex)
    expect(unpricedUses(vertex)).toContain('web_searches')
    const bedrock = table('aws', 'regional.anthropic.claude-sonnet-4-5-20250929-v1:0')
    expect(withToolFees('aws', bedrock)).toBe(bedrock)
    // A Claude table is never given OpenAI's fees (Azure's data falls back to Anthropic's).
    expect(withToolFees('azure', vertex)).toBe(vertex)
  })

  it("prices web_search_preview at $25 per 1,000 on gpt-4o and gpt-4.1 models only", () => {
    for (const id of ['gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'gpt-4.1-mini', 'gpt-4o-search-preview']) {
      for (const p of prices(withPreviewSearchFee('openai', withToolFees('openai', table('openai', id))))) expect(p.web_searches_kcount).toBe(25)
    }
    for (const id of ['o3', 'gpt-5', 'o4-mini']) {
      const m = table('openai', id)
      expect(withPreviewSearchFee('openai', m)).toBe(m)
    }
    const sonar = table('perplexity', 'sonar')
    expect(withPreviewSearchFee('perplexity', sonar)).toBe(sonar)
  })
})
