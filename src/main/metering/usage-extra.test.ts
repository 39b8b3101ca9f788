import { describe, expect, it } from 'vitest'
import { CALL_COLUMNS, callValues } from '../ledger/columns'
import { parseSpill } from '../reliability/spill'
import { emptyUsage } from './usage'
import { usageExtra, withUsageExtra } from './usage-extra'

const AT = CALL_COLUMNS.indexOf('usage_extra')

describe('usage_extra: what a call was billed beyond its token columns', () => {
  it('is null for a plain call (nothing to build), and only the keys a call had otherwise', () => {
    expect(usageExtra({ ...emptyUsage(), input_tokens: 10, output_tokens: 5 })).toBeNull()
    expect(usageExtra({ ...emptyUsage(), extra: { input_audio_tokens: 0 } })).toBeNull()
    const u = { ...emptyUsage(), input_tokens: 10, web_searches: 2, extra: { input_audio_tokens: 4, output_image_tokens: 0 }, provider_cost_usd: 0 }
    const json = usageExtra(u)
    expect(JSON.parse(json!)).toEqual({ web_searches: 2, extra: { input_audio_tokens: 4 }, provider_cost_usd: 0 })
  })

  it('keeps a batch request whose batch rate is not known as such, so re-pricing leaves it unpriced', () => {
    const u = { ...emptyUsage(), input_tokens: 10, output_tokens: 5, batch: true, batch_rate_unknown: true }
    expect(JSON.parse(usageExtra(u)!)).toEqual({ batch: true, batch_rate_unknown: true })
    expect(withUsageExtra(emptyUsage(), usageExtra(u))).toEqual({ ...emptyUsage(), batch: true, batch_rate_unknown: true })
    expect(withUsageExtra(emptyUsage(), '{"batch":true,"batch_rate_unknown":1}')).toEqual({ ...emptyUsage(), batch: true })
  })

  it('keeps a batch request as such, alone or beside other parts, so re-pricing keeps its batch rates', () => {
    const u = { ...emptyUsage(), input_tokens: 10, output_tokens: 5, batch: true }
    expect(JSON.parse(usageExtra(u)!)).toEqual({ batch: true })
    expect(withUsageExtra({ ...emptyUsage(), input_tokens: 10, output_tokens: 5 }, usageExtra(u))).toEqual(u)
    const searched = { ...u, web_searches: 1 }
    expect(withUsageExtra({ ...emptyUsage(), input_tokens: 10, output_tokens: 5 }, usageExtra(searched))).toEqual(searched)
    expect(withUsageExtra(emptyUsage(), '{"batch":"yes"}')).toEqual(emptyUsage())
  })

  it('keeps a call billed with the data-residency premium as such, so re-pricing keeps it', () => {
    const u = { ...emptyUsage(), input_tokens: 10, output_tokens: 5, data_residency: true }
    expect(JSON.parse(usageExtra(u)!)).toEqual({ data_residency: true })
    expect(withUsageExtra({ ...emptyUsage(), input_tokens: 10, output_tokens: 5 }, usageExtra(u))).toEqual(u)
    const both = { ...u, batch: true, web_searches: 2 }
    expect(JSON.parse(usageExtra(both)!)).toEqual({ web_searches: 2, batch: true, data_residency: true })
    expect(withUsageExtra(emptyUsage(), '{"data_residency":1}')).toEqual(emptyUsage())
  })

  it("keeps the images a Responses image tool made by image model, not whether a count was a guess (the ledger's estimated says it)", () => {
    const u = { ...emptyUsage(), input_tokens: 10, output_tokens: 5, tool_images: { 'gpt-image-1': 272, 'gpt-image-1.5': 0 }, guessed: true }
    expect(JSON.parse(usageExtra(u)!)).toEqual({ tool_images: { 'gpt-image-1': 272 } })
    expect(withUsageExtra({ ...emptyUsage(), input_tokens: 10, output_tokens: 5 }, usageExtra(u))).toEqual({ ...u, tool_images: { 'gpt-image-1': 272 }, guessed: undefined })
    expect(withUsageExtra(emptyUsage(), '{"tool_images":{"gpt-image-1":"272","gpt-image-1-mini":-1}}')).toEqual(emptyUsage())
    // A model name from the answer is only a key: one spelled `__proto__` changes no object's prototype.
    const odd = withUsageExtra(emptyUsage(), '{"tool_images":{"__proto__":6240}}')
    expect(Object.keys(odd.tool_images!)).toEqual(['__proto__'])
    expect(JSON.parse(usageExtra(odd)!)).toEqual(JSON.parse('{"tool_images":{"__proto__":6240}}'))
  })

  it('keeps a call a fast tier served as such, so re-pricing gives it its fast price again', () => {
    const u = { ...emptyUsage(), input_tokens: 10, output_tokens: 5, fast: true }
    expect(JSON.parse(usageExtra(u)!)).toEqual({ fast: true })
    expect(withUsageExtra({ ...emptyUsage(), input_tokens: 10, output_tokens: 5 }, usageExtra(u))).toEqual(u)
    expect(withUsageExtra(emptyUsage(), '{"fast":"yes"}')).toEqual(emptyUsage())
  })

  it('keeps a Perplexity call\'s search context size, so re-pricing charges that size\'s request fee again', () => {
    const u = { ...emptyUsage(), input_tokens: 10, output_tokens: 5, search_context_size: 'medium' as const }
    expect(JSON.parse(usageExtra(u)!)).toEqual({ search_context_size: 'medium' })
    expect(withUsageExtra({ ...emptyUsage(), input_tokens: 10, output_tokens: 5 }, usageExtra(u))).toEqual(u)
    expect(withUsageExtra(emptyUsage(), '{"search_context_size":"huge"}')).toEqual(emptyUsage())
  })

  it('keeps a Perplexity Pro Search call\'s mark, so re-pricing charges Pro Search\'s fee again', () => {
    const u = { ...emptyUsage(), input_tokens: 10, output_tokens: 5, search_context_size: 'low' as const, pro_search: true }
    expect(JSON.parse(usageExtra(u)!)).toEqual({ search_context_size: 'low', pro_search: true })
    expect(withUsageExtra({ ...emptyUsage(), input_tokens: 10, output_tokens: 5 }, usageExtra(u))).toEqual(u)
    expect(withUsageExtra(emptyUsage(), '{"pro_search":"yes"}')).toEqual(emptyUsage())
  })

  it("keeps an OpenAI call's web_search_preview mark, so re-pricing charges that tool's fee again", () => {
    const u = { ...emptyUsage(), input_tokens: 10, output_tokens: 5, web_searches: 2, web_search_preview: true }
    expect(JSON.parse(usageExtra(u)!)).toEqual({ web_searches: 2, web_search_preview: true })
    expect(withUsageExtra({ ...emptyUsage(), input_tokens: 10, output_tokens: 5 }, usageExtra(u))).toEqual(u)
    expect(withUsageExtra(emptyUsage(), '{"web_search_preview":1}')).toEqual(emptyUsage())
  })

  it("keeps a Gemini call's Google Search grounding, so re-pricing prices it as the setting says again", () => {
    const base = { ...emptyUsage(), input_tokens: 101, output_tokens: 236 }
    const u = { ...base, google_search_queries: 2, google_search_grounded: true }
    expect(JSON.parse(usageExtra(u)!)).toEqual({ google_search_queries: 2, google_search_grounded: true })
    expect(withUsageExtra(base, usageExtra(u))).toEqual(u)
    expect(withUsageExtra(base, '{"google_search_queries":-1,"google_search_grounded":"yes"}')).toEqual(base)
  })

  it('reads back into the usage exactly; unreadable text adds nothing, bad values are left out', () => {
    const u = { ...emptyUsage(), input_tokens: 100, output_tokens: 7, storage_searches: 1, extra: { audio_seconds: 95.5 }, provider_cost_usd: 0.1 + 0.2 }
    const back = withUsageExtra({ ...emptyUsage(), input_tokens: 100, output_tokens: 7 }, usageExtra(u))
    expect(back).toEqual(u)
    const base = { ...emptyUsage(), input_tokens: 1 }
    expect(withUsageExtra(base, null)).toBe(base)
    expect(withUsageExtra(base, '{not json')).toBe(base)
    expect(withUsageExtra(base, '[1]')).toBe(base)
    expect(withUsageExtra(base, '{"web_searches":-1,"extra":{"a":"x","b":3},"provider_cost_usd":"1"}')).toEqual({ ...base, extra: { b: 3 } })
  })

  it('a spill file written before the column existed still loads (the column is NULL); a newer one keeps it', () => {
    const old = { ts: 1, provider: 'openai', model: 'gpt-5', input_tokens: 1, output_tokens: 1 }
    const kept = { ...old, usage_extra: '{"web_searches":1}' }
    const [a, b] = parseSpill(`${JSON.stringify(old)}\n${JSON.stringify(kept)}\n`)
    expect(callValues(a, [])[AT]).toBeNull()
    expect(callValues(b, [])[AT]).toBe('{"web_searches":1}')
  })
})
