import http from 'node:http'
import { describe, expect, it } from 'vitest'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, recorded, sonarPrice } from './ledger'

/**
 * Perplexity's Pro Search for Sonar Pro (`web_search_options.search_type: "pro"`), which works
 * only on a stream (docs.perplexity.ai/docs/sonar/pro-search/quickstart: "Non-streaming requests
 * will fall back to standard Sonar Pro behavior"), is billed Pro Search's request fees: $14, $18
 * and $22 per 1,000 requests for the low, medium and high search context sizes, where Sonar Pro's
 * standard ("fast") search is billed $6, $10 and $14 (docs.perplexity.ai/getting-started/pricing,
 * "Pro Search Pricing"). Its answer names no search type: the last chunk's `usage.cost` (its
 * `request_cost` 0.014 at low, in the quickstart's example) is the only sign, and it is the charge.
 */
const s = serverOverMockUpstream()

const MODEL = 'sonar-pro'
const PROMPT = 15
const WORDS = 30
const PRO_FEE = { low: 14, medium: 18, high: 22 }
const FAST_FEE = { low: 6, medium: 10, high: 14 }
/** The quickstart's example answer's final charge (Pro Search, low context). */
const FINAL_COST = { input_tokens_cost: 0.0, output_tokens_cost: 0.001, request_cost: 0.014, total_cost: 0.015 }

/** A Sonar stream's chunk: the running usage, its cost a zero skeleton until the last chunk. */
function chunk(i: number, context: 'low' | 'medium' | 'high'): Buffer {
  const last = i === WORDS - 1
  const ev = {
    id: 'pplx-pro',
    model: MODEL,
    created: 1759957470,
    usage: {
      prompt_tokens: PROMPT,
      completion_tokens: (i + 1) * 2,
      total_tokens: PROMPT + (i + 1) * 2,
      search_context_size: context,
      cost: last ? FINAL_COST : { input_tokens_cost: 0, output_tokens_cost: 0, total_cost: 0 },
    },
    object: last ? 'chat.completion.done' : 'chat.completion.chunk',
    choices: [{ index: 0, delta: { role: 'assistant', content: last ? '' : `word${i} ` }, finish_reason: last ? 'stop' : null }],
  }
  return Buffer.from(`data: ${JSON.stringify(ev)}\n\n`)
}

function stream(context: 'low' | 'medium' | 'high', cutAfter?: number): void {
  const chunks = Array.from({ length: WORDS }, (_, i) => chunk(i, context))
  s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks, delayMs: cutAfter ? 2 : 1, ...(cutAfter ? { resetAfterChunks: cutAfter } : {}) }))
}

/** A streamed Sonar Pro request with these `web_search_options`, read to its end (or its cut). */
function call(options: Record<string, unknown>): Promise<void> {
  return new Promise<void>((resolve) => {
    const req = http.request(
      `${s.t.url}/perplexity/v1/chat/completions`,
      { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer pplx-pro-0000000000001' }, agent: false },
      (res) => {
        res.resume()
        res.on('close', () => resolve())
        res.on('error', () => resolve())
      },
    )
    req.on('error', () => resolve())
    req.end(JSON.stringify({ model: MODEL, stream: true, messages: [{ role: 'user', content: 'Analyze it.' }], web_search_options: options }))
  })
}

describe('Perplexity Pro Search (search_type "pro" on a Sonar Pro stream)', () => {
  it('whole: the charge its last chunk reports is the cost', async () => {
    stream('low')
    const row = await recorded(s.t, () => call({ search_type: 'pro' }))
    expect(row).toMatchObject({ provider: 'perplexity', model: MODEL, estimated: 0, priced: 1, input_tokens: PROMPT, output_tokens: WORDS * 2 })
    expect(row.cost_usd).toBe(FINAL_COST.total_cost)
  })

  for (const context of ['low', 'medium'] as const) {
    it(`cut before its last chunk (${context} context): priced from its tokens at Pro Search's request fee, not Sonar Pro's standard one`, async () => {
      stream(context, 10)
      const row = await recorded(s.t, () => call({ search_type: 'pro', search_context_size: context }))
      expect(row).toMatchObject({ provider: 'perplexity', status: 502, error: 'upstream_reset', estimated: 1, priced: 1, input_tokens: PROMPT })
      const usage = { input_tokens: row.input_tokens, output_tokens: row.output_tokens }
      expect(row.cost_usd).toBe(sonarPrice(usage, MODEL, PRO_FEE[context], new Date(row.ts)))
      expect(row.cost_usd).toBeGreaterThan(sonarPrice(usage, MODEL, FAST_FEE[context], new Date(row.ts)))
    })
  }

  it('search_type "fast" (the default), cut: Sonar Pro\'s standard fee', async () => {
    stream('low', 10)
    const row = await recorded(s.t, () => call({ search_type: 'fast' }))
    expect(row).toMatchObject({ estimated: 1, priced: 1 })
    expect(row.cost_usd).toBe(sonarPrice({ input_tokens: row.input_tokens, output_tokens: row.output_tokens }, MODEL, FAST_FEE.low, new Date(row.ts)))
  })

  it('asked for without a stream: Pro Search falls back to standard Sonar Pro, billed its standard fee', async () => {
    answer(s.upstream, {
      id: 'pplx-1', model: MODEL, object: 'chat.completion', created: 1759957470,
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello.' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 1200, completion_tokens: 300, total_tokens: 1500, search_context_size: 'low' },
    })
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/perplexity/v1/chat/completions`, { model: MODEL, messages: [], web_search_options: { search_type: 'pro' } }, { authorization: 'Bearer pplx-pro-0000000000001' }),
    )
    expect(row).toMatchObject({ estimated: 0, priced: 1, input_tokens: 1200, output_tokens: 300 })
    expect(row.cost_usd).toBe(sonarPrice({ input_tokens: 1200, output_tokens: 300 }, MODEL, FAST_FEE.low, new Date(row.ts)))
  })
})
