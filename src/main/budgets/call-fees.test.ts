import { beforeAll, describe, expect, it } from 'vitest'
import { emptyUsage, type Usage } from '../metering/usage'
import { usageExtra } from '../metering/usage-extra'
import { loadPriceLibrary } from '../pricing/library'
import { Pricer } from '../pricing/price'
import { openai } from '../providers/openai'
import type { CallContext } from '../proxy/gate'
import type { CallShape } from '../providers/types'
import { chargesBeyondTokens, teaches } from './call-fees'
import { CallHistory, expectedUsd } from './expected'
import type { LearntUsage } from './types'

beforeAll(async () => {
  await loadPriceLibrary()
})

const pricer = new Pricer([])
const TS = Date.parse('2026-03-01T12:00:00Z')

/** A call recorded as the recorder records it: its usage priced whole. */
function recorded(model: string, u: Usage): LearntUsage {
  const p = pricer.price('openai', 'openai', model, u, new Date(TS))
  return { ts: TS, model, priced: p.priced, cost_usd: p.cost_usd, ...u, usage_extra: usageExtra(u) }
}

const tokens = (over: Partial<Usage> = {}): Usage => ({ ...emptyUsage(), input_tokens: 1200, output_tokens: 600, cache_read_tokens: 1000, ...over })
const tokensUsd = (model: string, over: Partial<Usage> = {}) => pricer.price('openai', 'openai', model, tokens(over), new Date(TS)).cost_usd

function ctx(model: string, shape: Partial<CallShape> = {}, body: Record<string, unknown> = {}): CallContext {
  return {
    provider: openai,
    shape: { endpoint: 'responses', model, stream: false, billable: true, ...shape },
    apiKey: 'sk-x', apiKeyHash: 'h', keyHint: '…', tenant: '', agent: '', session: '',
    ts: TS, body: { model, max_output_tokens: 4000, ...body }, bodyBytes: 3000,
  }
}

/** `n` answered calls of the model, each charged `fees` beyond its tokens (`tools`: their requests named a billed tool). */
function learnt(model: string, fees: number | null, n = 5, tools = false): CallHistory {
  const h = new CallHistory()
  for (let i = 0; i < n; i++) h.learn('openai', model, 600, 1e-9, fees, undefined, false, tools ? 'billed' : 'none')
  return h
}

describe('what a recorded call was charged beyond its tokens', () => {
  it('is its cost minus its tokens at the price it was recorded at: three web searches of gpt-5', () => {
    const call = recorded('gpt-5', tokens({ web_searches: 3 }))
    expect(call.cost_usd).toBeGreaterThan(0.03)
    expect(chargesBeyondTokens(pricer, 'openai', 'openai', call)).toBeCloseTo(0.03, 15)
  })

  it('prices the tokens as the call was: at its fast tier', () => {
    const call = recorded('gpt-5', tokens({ web_searches: 1, fast: true }))
    expect(call.cost_usd - 0.01).toBeCloseTo(tokensUsd('gpt-5', { fast: true }), 15)
    expect(tokensUsd('gpt-5', { fast: true })).toBeGreaterThan(tokensUsd('gpt-5'))
    expect(chargesBeyondTokens(pricer, 'openai', 'openai', call)).toBeCloseTo(0.01, 15)
  })

  it('is 0 for a call that kept nothing beyond its token columns, and unknown for an unpriced one', () => {
    expect(chargesBeyondTokens(pricer, 'openai', 'openai', recorded('gpt-5', tokens()))).toBe(0)
    expect(chargesBeyondTokens(pricer, 'openai', 'openai', recorded('no-such-model', tokens({ web_searches: 2 })))).toBeNull()
  })

  it("is, for a charge the provider reported, only the per-use charges its usage names: never the reported cost's gap above the tokens' list price", () => {
    const reported = (provider: string, model: string, u: Usage, cost: number): LearntUsage => ({ ts: TS, model, priced: true, cost_usd: cost, ...u, usage_extra: usageExtra({ ...u, provider_cost_usd: cost }) })
    // OpenRouter routed to an upstream 1.5 times the list: no per-use charge, nothing beyond tokens.
    const list = pricer.price('openrouter', 'openrouter', 'openai/gpt-4o', tokens(), new Date(TS)).cost_usd
    expect(chargesBeyondTokens(pricer, 'openrouter', 'openrouter', reported('openrouter', 'openai/gpt-4o', tokens(), 1.5 * list))).toBe(0)
    // Sonar Deep Research: its 20 searches at $5 per 1,000, whatever its reported cost says of its tokens.
    const dr = tokens({ web_searches: 20 })
    expect(chargesBeyondTokens(pricer, 'perplexity', 'perplexity', reported('perplexity', 'sonar-deep-research', dr, 0.5))).toBeCloseTo(0.1, 15)
    // Never more than the whole reported charge; Sonar's counted searches are billed by the request (no price): 0.
    expect(chargesBeyondTokens(pricer, 'perplexity', 'perplexity', reported('perplexity', 'sonar-deep-research', dr, 0.04))).toBe(0.04)
    expect(chargesBeyondTokens(pricer, 'perplexity', 'perplexity', reported('perplexity', 'sonar', tokens({ web_searches: 3 }), 0.9))).toBe(0)
  })
})

describe('an expected reservation adds what its model was charged beyond tokens, past what its request already counts', () => {
  it('a Responses call with the web_search tool: its model learnt one search per call, so each call reserves it', () => {
    const c = ctx('gpt-5', {}, { tools: [{ type: 'web_search' }] })
    const without = expectedUsd(pricer, learnt('gpt-5', 0, 5, true), c)
    expect(expectedUsd(pricer, learnt('gpt-5', 0.01, 5, true), c)).toBeCloseTo(without + 0.01, 15)
    // Until 5 calls were seen, nothing is added.
    expect(expectedUsd(pricer, learnt('gpt-5', 0.01, 4, true), c)).toBe(expectedUsd(pricer, new CallHistory(), c))
  })

  it('a call that names no billed tool is not reserved the searches of calls that named one', () => {
    const plain = ctx('gpt-5', {}, { tools: [{ type: 'function', name: 'f', parameters: {} }] })
    expect(expectedUsd(pricer, learnt('gpt-5', 0.01, 5, true), plain)).toBe(expectedUsd(pricer, learnt('gpt-5', 0, 5, true), plain))
    // Fees learnt from calls naming no tool (Perplexity Deep Research's searches) are reserved for such calls.
    expect(expectedUsd(pricer, learnt('gpt-5', 0.01), plain)).toBeCloseTo(expectedUsd(pricer, learnt('gpt-5', 0), plain) + 0.01, 15)
  })

  it("a Chat Completions search model: the one search every answer makes is reserved from the request, not twice", () => {
    const model = 'gpt-4o-mini-search-preview'
    const c = ctx(model, { endpoint: 'chat.completions', webSearchEachCall: true })
    const each = chargesBeyondTokens(pricer, 'openai', 'openai', recorded(model, tokens({ web_searches: 1, web_search_preview: true })))!
    expect(each).toBeCloseTo(0.025, 15)
    expect(expectedUsd(pricer, learnt(model, each), c)).toBe(expectedUsd(pricer, learnt(model, 0), c))
    // Answers that searched three times: two more are reserved.
    expect(expectedUsd(pricer, learnt(model, 3 * each), c)).toBeCloseTo(expectedUsd(pricer, learnt(model, 0), c) + 2 * each, 15)
  })

  it('the image_generation tool: the one image the request reserves is not counted again, a second one is', () => {
    const tool = { type: 'image_generation', quality: 'low', size: '1024x1024' }
    const c = ctx('gpt-5-nano', {}, { tools: [tool] })
    const one = chargesBeyondTokens(pricer, 'openai', 'openai', recorded('gpt-5-nano', tokens({ tool_images: { 'gpt-image-1': 272 } })))!
    expect(one).toBeGreaterThan(0.01)
    const base = expectedUsd(pricer, learnt('gpt-5-nano', 0, 5, true), c)
    expect(expectedUsd(pricer, learnt('gpt-5-nano', one, 5, true), c)).toBe(base)
    expect(expectedUsd(pricer, learnt('gpt-5-nano', 2 * one, 5, true), c)).toBeCloseTo(base + one, 15)
  })

  it('a background response is expected from background responses of its model', () => {
    const h = learnt('o3-deep-research', 0)
    h.learn('openai', 'o3-deep-research', 600, 1e-9, 0.4, undefined, true)
    const fg = ctx('o3-deep-research')
    const bg = ctx('o3-deep-research', {}, { background: true })
    expect(expectedUsd(pricer, h, bg) - expectedUsd(pricer, h, fg)).toBeCloseTo(0.4, 12)
  })

  it('a call billed by units (seconds of audio, pages): what they cost is its charge beyond its tokens, and it teaches though it has no output', () => {
    const at = new Date(TS)
    const whisper = { ...emptyUsage(), extra: { audio_seconds: 600 } }
    const w = pricer.price('openai', 'openai', 'whisper-1', whisper, at)
    const wc: LearntUsage = { ts: TS, model: 'whisper-1', priced: w.priced, cost_usd: w.cost_usd, ...whisper, usage_extra: usageExtra(whisper) }
    expect(w.cost_usd).toBeCloseTo(0.06, 12)
    expect(chargesBeyondTokens(pricer, 'openai', 'openai', wc)).toBe(w.cost_usd)
    expect(teaches(wc)).toBe(true)
    const ocr = { ...emptyUsage(), extra: { input_document_pages: 29 } }
    const o = pricer.price('mistral', 'mistral', 'mistral-ocr-2505', ocr, at)
    const oc: LearntUsage = { ts: TS, model: 'mistral-ocr-2505', priced: o.priced, cost_usd: o.cost_usd, ...ocr, usage_extra: usageExtra(ocr) }
    expect(o.cost_usd).toBeGreaterThan(0)
    expect(chargesBeyondTokens(pricer, 'mistral', 'mistral', oc)).toBeCloseTo(o.cost_usd, 15)
    expect(teaches(oc)).toBe(true)
    // A call with neither output nor such units (an embedding) teaches nothing, as before.
    expect(teaches({ output_tokens: 0, usage_extra: null })).toBe(false)
  })
})
