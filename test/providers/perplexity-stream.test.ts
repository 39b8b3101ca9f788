import http from 'node:http'
import { describe, expect, it } from 'vitest'
import { serverOverMockUpstream } from '../support/server'
import { postJson } from '../support/http'
import { answer, recorded, sonarPrice } from './ledger'

/**
 * A Perplexity Sonar stream carries its usage in every chunk, `usage.cost` included: the running
 * count so far, whose `total_cost` is 0 until the last chunk (`object: "chat.completion.done"`,
 * with `finish_reason`) brings the whole charge, request fee and all. The shape is a recorded
 * live stream's (vercel/ai packages/perplexity/src/__fixtures__/perplexity-usage-raw-live.chunks.txt),
 * longer.
 *
 * Sonar's request fee depends on the search context size the call ran with, which its usage
 * names (`search_context_size`) and the request may set (`web_search_options.search_context_size`,
 * default "low"): Sonar's is $5, $8 and $12 per 1,000 requests for low, medium and high. The price
 * data has only the highest (its `requests_kcount`), so a call priced from its tokens is priced at
 * the data's token prices and the fee of its context size (`sonarPrice`).
 */

const s = serverOverMockUpstream()

const MODEL = 'sonar'
const PROMPT = 40
const WORDS = 30
const FINAL_COST = { input_tokens_cost: 0.00004, output_tokens_cost: 0.00006, request_cost: 0.005, total_cost: 0.0051 }

/** Perplexity's Sonar request fee per 1,000 requests, by search context size (docs.perplexity.ai/getting-started/pricing). */
const SONAR_FEE = { low: 5, medium: 8, high: 12 }

function chunk(i: number, context: string | null = 'low'): Buffer {
  const last = i === WORDS - 1
  const ev = {
    id: 'pplx-running',
    model: MODEL,
    created: 1788310800,
    usage: {
      completion_tokens: (i + 1) * 2,
      cost: last ? FINAL_COST : { input_tokens_cost: 0, output_tokens_cost: 0, total_cost: 0 },
      prompt_tokens: PROMPT,
      ...(context === null ? {} : { search_context_size: context }),
      total_tokens: PROMPT + (i + 1) * 2,
    },
    object: last ? 'chat.completion.done' : 'chat.completion.chunk',
    choices: [{ index: 0, delta: { role: 'assistant', content: last ? '' : `word${i} ` }, finish_reason: last ? 'stop' : null }],
  }
  return Buffer.from(`data: ${JSON.stringify(ev)}\n\n`)
}
const events = Array.from({ length: WORDS }, (_, i) => chunk(i))

function call(request: Record<string, unknown> = {}): Promise<void> {
  return new Promise<void>((resolve) => {
    const req = http.request(
      `${s.t.url}/perplexity/v1/chat/completions`,
      { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer pplx-running-000000000001' }, agent: false },
      (res) => {
        res.resume()
        res.on('close', () => resolve())
        res.on('error', () => resolve())
      },
    )
    req.on('error', () => resolve())
    req.end(JSON.stringify({ model: MODEL, stream: true, messages: [{ role: 'user', content: 'Say thirty words.' }], ...request }))
  })
}

describe('a Perplexity stream (a running usage and cost in every chunk)', () => {
  it('whole: the last chunk’s reported charge is the cost, not estimated', async () => {
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: events, delayMs: 1 }))
    const row = await recorded(s.t, call)
    expect(row).toMatchObject({ provider: 'perplexity', status: 200, estimated: 0, priced: 1, input_tokens: PROMPT, output_tokens: WORDS * 2 })
    expect(row.cost_usd).toBe(FINAL_COST.total_cost)
  })

  it('cut before its last chunk: priced from its tokens at the request fee of the context size its chunks name, not at the running chunk’s $0', async () => {
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: events, resetAfterChunks: 10, delayMs: 2 }))
    const row = await recorded(s.t, call)
    expect(row).toMatchObject({ provider: 'perplexity', status: 502, error: 'upstream_reset', estimated: 1, priced: 1, input_tokens: PROMPT })
    expect(row.output_tokens).toBeGreaterThanOrEqual(2)
    expect(row.output_tokens).toBeLessThan(WORDS * 2)
    // The running chunk's cost (0) is not the call's charge: what was generated is priced at the
    // model's rates, with the low context's fee ($5/1,000), not the data's one fee (the high one, $12).
    const usage = { input_tokens: row.input_tokens, output_tokens: row.output_tokens }
    expect(row.cost_usd).toBe(sonarPrice(usage, MODEL, SONAR_FEE.low, new Date(row.ts)))
    expect(row.cost_usd).toBeGreaterThan(0)
  })

  // Review of 5468619 (test/review/today-perplexity-cut.test.ts): the cut stream was recorded at $0.012059,
  // more than twice the $0.0051 the whole stream is billed.
  it('cut: recorded at no more than the whole stream is billed', async () => {
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: events, delayMs: 1 }))
    const whole = await recorded(s.t, call)
    expect(whole.cost_usd).toBe(FINAL_COST.total_cost)

    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: events, resetAfterChunks: 10, delayMs: 2 }))
    const cut = await recorded(s.t, call)
    expect(cut).toMatchObject({ estimated: 1, input_tokens: PROMPT })
    expect(cut.output_tokens).toBeLessThan(WORDS * 2)
    // Fewer tokens than the whole stream, the same request: at most the whole stream's charge.
    expect(cut.cost_usd).toBeLessThanOrEqual(whole.cost_usd)
  })

  it('cut, its chunks naming no context size: the fee of the size the request set (web_search_options)', async () => {
    const unnamed = Array.from({ length: WORDS }, (_, i) => chunk(i, null))
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: unnamed, resetAfterChunks: 10, delayMs: 2 }))
    const row = await recorded(s.t, () => call({ web_search_options: { search_context_size: 'medium' } }))
    expect(row).toMatchObject({ provider: 'perplexity', estimated: 1, priced: 1, input_tokens: PROMPT })
    const usage = { input_tokens: row.input_tokens, output_tokens: row.output_tokens }
    expect(row.cost_usd).toBe(sonarPrice(usage, MODEL, SONAR_FEE.medium, new Date(row.ts)))
  })
})

describe('a Perplexity answer without usage.cost', () => {
  const H = { authorization: 'Bearer pplx-running-000000000001' }
  function completion(usage: Record<string, unknown>) {
    return { id: 'pplx-1', model: MODEL, object: 'chat.completion', created: 1788310800, choices: [{ index: 0, message: { role: 'assistant', content: 'Hello.' }, finish_reason: 'stop' }], usage }
  }
  const TOKENS = { prompt_tokens: 1200, completion_tokens: 300, total_tokens: 1500 }
  const PRICED = { input_tokens: 1200, output_tokens: 300 }

  it('the context size the answer names wins over the request’s', async () => {
    answer(s.upstream, completion({ ...TOKENS, search_context_size: 'high' }))
    const row = await recorded(s.t, () => postJson(`${s.t.url}/perplexity/v1/chat/completions`, { model: MODEL, messages: [], web_search_options: { search_context_size: 'low' } }, H))
    expect(row).toMatchObject({ provider: 'perplexity', estimated: 0, priced: 1, input_tokens: 1200, output_tokens: 300 })
    expect(row.cost_usd).toBe(sonarPrice(PRICED, MODEL, SONAR_FEE.high, new Date(row.ts)))
  })

  it('naming none, nor the request: Perplexity’s default context size (low)', async () => {
    answer(s.upstream, completion(TOKENS))
    const row = await recorded(s.t, () => postJson(`${s.t.url}/perplexity/v1/chat/completions`, { model: MODEL, messages: [] }, H))
    expect(row).toMatchObject({ provider: 'perplexity', estimated: 0, priced: 1 })
    expect(row.cost_usd).toBe(sonarPrice(PRICED, MODEL, SONAR_FEE.low, new Date(row.ts)))
  })

  it('with usage.cost: the reported charge, whatever the context size', async () => {
    answer(s.upstream, completion({ ...TOKENS, search_context_size: 'high', cost: { request_cost: 0.012, total_cost: 0.0135 } }))
    const row = await recorded(s.t, () => postJson(`${s.t.url}/perplexity/v1/chat/completions`, { model: MODEL, messages: [] }, H))
    expect(row.cost_usd).toBe(0.0135)
  })
})
