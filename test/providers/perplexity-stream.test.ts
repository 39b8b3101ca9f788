import http from 'node:http'
import { calcPrice } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { serverOverMockUpstream } from '../support/server'
import { recorded } from './ledger'

/**
 * A Perplexity Sonar stream carries its usage in every chunk, `usage.cost` included: the running
 * count so far, whose `total_cost` is 0 until the last chunk (`object: "chat.completion.done"`,
 * with `finish_reason`) brings the whole charge, request fee and all. The shape is a recorded
 * live stream's (vercel/ai packages/perplexity/src/__fixtures__/perplexity-usage-raw-live.chunks.txt),
 * longer.
 */

const s = serverOverMockUpstream()

const MODEL = 'sonar'
const PROMPT = 40
const WORDS = 30
const FINAL_COST = { input_tokens_cost: 0.00004, output_tokens_cost: 0.00006, request_cost: 0.005, total_cost: 0.0051 }

function chunk(i: number): Buffer {
  const last = i === WORDS - 1
  const ev = {
    id: 'pplx-running',
    model: MODEL,
    created: 1788310800,
    usage: {
      completion_tokens: (i + 1) * 2,
      cost: last ? FINAL_COST : { input_tokens_cost: 0, output_tokens_cost: 0, total_cost: 0 },
      prompt_tokens: PROMPT,
      search_context_size: 'low',
      total_tokens: PROMPT + (i + 1) * 2,
    },
    object: last ? 'chat.completion.done' : 'chat.completion.chunk',
    choices: [{ index: 0, delta: { role: 'assistant', content: last ? '' : `word${i} ` }, finish_reason: last ? 'stop' : null }],
  }
  return Buffer.from(`data: ${JSON.stringify(ev)}\n\n`)
}
const events = Array.from({ length: WORDS }, (_, i) => chunk(i))

function call(): Promise<void> {
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
    req.end(JSON.stringify({ model: MODEL, stream: true, messages: [{ role: 'user', content: 'Say thirty words.' }] }))
  })
}

describe('a Perplexity stream (a running usage and cost in every chunk)', () => {
  it('whole: the last chunk’s reported charge is the cost, not estimated', async () => {
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: events, delayMs: 1 }))
    const row = await recorded(s.t, call)
    expect(row).toMatchObject({ provider: 'perplexity', status: 200, estimated: 0, priced: 1, input_tokens: PROMPT, output_tokens: WORDS * 2 })
    expect(row.cost_usd).toBe(FINAL_COST.total_cost)
  })

  it('cut before its last chunk: priced from its tokens (request fee included), not at the running chunk’s $0', async () => {
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: events, resetAfterChunks: 10, delayMs: 2 }))
    const row = await recorded(s.t, call)
    expect(row).toMatchObject({ provider: 'perplexity', status: 502, error: 'upstream_reset', estimated: 1, priced: 1, input_tokens: PROMPT })
    expect(row.output_tokens).toBeGreaterThanOrEqual(2)
    expect(row.output_tokens).toBeLessThan(WORDS * 2)
    // The running chunk's cost (0) is not the call's charge: what was generated is priced at the model's rates.
    const expected = calcPrice({ input_tokens: row.input_tokens, output_tokens: row.output_tokens }, MODEL, { providerId: 'perplexity', timestamp: new Date(row.ts) })
    expect(expected).not.toBeNull()
    expect(row.cost_usd).toBe(expected!.total_price)
    expect(row.cost_usd).toBeGreaterThan(0)
  })
})
