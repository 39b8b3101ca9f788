import { describe, expect, it } from 'vitest'
import { billedPerPrompt, searchGroundingUsd } from '../pricing/search-grounding'
import { SearchGrounding, requestsGoogleSearch } from './gemini-grounding'

describe('requestsGoogleSearch', () => {
  it('finds the Google Search tool in either spelling, the retrieval tool, and under Code Assist\'s request', () => {
    expect(requestsGoogleSearch({ tools: [{ googleSearch: {} }] })).toBe(true)
    expect(requestsGoogleSearch({ tools: [{ functionDeclarations: [] }, { google_search: {} }] })).toBe(true)
    expect(requestsGoogleSearch({ tools: [{ google_search_retrieval: { dynamic_retrieval_config: { mode: 'MODE_DYNAMIC' } } }] })).toBe(true)
    expect(requestsGoogleSearch({ model: 'gemini-2.5-pro', request: { tools: [{ googleSearch: {} }] } })).toBe(true)
    expect(requestsGoogleSearch({ tools: [{ urlContext: {} }, { googleMaps: {} }] })).toBe(false)
    expect(requestsGoogleSearch({ tools: 'googleSearch' })).toBe(false)
    expect(requestsGoogleSearch(undefined)).toBe(false)
  })
})

describe('SearchGrounding', () => {
  it('counts distinct non-empty queries; Maps grounding alone is not Google Search', () => {
    const g = new SearchGrounding()
    g.take({})
    expect(g.usage()).toBeUndefined()
    g.take({ groundingChunks: [{ maps: { uri: 'https://maps.google.com/?cid=1' } }] })
    expect(g.usage()).toBeUndefined()
    g.take({ webSearchQueries: ['', '  ', 'a', 'a', 7] })
    g.take({ webSearchQueries: ['b', 'a'] })
    expect(g.usage()).toEqual({ google_search_queries: 2, google_search_grounded: true })
  })

  it('a prompt with Search suggestions but no query is grounded, with no query to bill', () => {
    const g = new SearchGrounding()
    g.take({ searchEntryPoint: { renderedContent: '<div></div>' }, groundingChunks: [{ web: { uri: 'https://example.com', title: 'example.com' } }] })
    expect(g.usage()).toEqual({ google_search_grounded: true })
  })

  it('web sources alone are not a search: URL context names the pages it fetched so', () => {
    const g = new SearchGrounding()
    g.take({ groundingChunks: [{ web: { uri: 'https://ai.pydantic.dev', title: 'Pydantic AI' } }], groundingSupports: [] })
    expect(g.usage()).toBeUndefined()
  })
})

describe('the grounding fee at list', () => {
  it('Gemini 2.5 and older per grounded prompt, Gemini 3 and ids without a generation per query', () => {
    for (const m of ['gemini-2.5-flash', 'gemini-2.0-flash-001', 'gemini-1.5-pro', 'models/gemini-2.5-pro']) expect(billedPerPrompt(m)).toBe(true)
    for (const m of ['gemini-3-flash-preview', 'gemini-3.1-pro-preview', 'gemini-flash-latest']) expect(billedPerPrompt(m)).toBe(false)
    expect(searchGroundingUsd('gemini-2.5-flash', { google_search_queries: 4, google_search_grounded: true })).toBe(35 / 1000)
    expect(searchGroundingUsd('gemini-3-pro-preview', { google_search_queries: 3, google_search_grounded: true })).toBe((3 * 14) / 1000)
    expect(searchGroundingUsd('gemini-3-pro-preview', { google_search_grounded: true })).toBe(0)
  })
})
