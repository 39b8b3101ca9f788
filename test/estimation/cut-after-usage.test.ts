import http from 'node:http'
import { calcPrice } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { estimateOutputTokens } from '../../src/main/metering/estimate'
import { fixture, sseChunks } from '../support/fixtures'
import { serverOverMockUpstream } from '../support/server'
import { recorded } from '../providers/ledger'

/**
 * Streams whose prompt-side usage arrives before their output count.
 *
 * An Anthropic stream reports its prompt-side usage in `message_start` (with `output_tokens` of
 * 1 or so) and the output count only in the last `message_delta`. A stream cut in between (the
 * upstream resets, the client leaves) has exact prompt counts and no output count: the output is
 * estimated from what streamed, and the call is marked estimated, never recorded as an exact
 * 1-token answer.
 */

const FILE = 'anthropic/messages-stream-cache-write.sse' // claude-3-5-sonnet-20240620; input 4, cache write 1165
const MODEL = 'claude-3-5-sonnet-20240620'
const BODY = JSON.stringify({ model: MODEL, stream: true, max_tokens: 1024, messages: [{ role: 'user', content: 'Tell me a story.' }] })

const s = serverOverMockUpstream()

/** The text the whole events in `bytes` streamed (their text deltas). */
function streamedText(bytes: Buffer): string {
  let text = ''
  for (const e of bytes.toString('utf8').split('\n\n')) {
    const data = /^data: (.*)$/m.exec(e)?.[1]
    if (!data) continue
    let ev: any
    try {
      ev = JSON.parse(data)
    } catch {
      continue // an event cut in the middle
    }
    if (ev.type === 'content_block_delta' && typeof ev.delta?.text === 'string') text += ev.delta.text
  }
  return text
}

function price(row: any): number {
  const p = calcPrice(
    { input_tokens: row.input_tokens, cache_write_tokens: row.cache_write_tokens, output_tokens: row.output_tokens },
    MODEL,
    { providerId: 'anthropic', timestamp: new Date(row.ts) },
  )
  expect(p).not.toBeNull()
  return p!.total_price
}

/**
 * POSTs the stream request and reads the answer until it ends or is cut (with `leaveAfter`, the
 * client hangs up after that many chunks); `got` collects the bytes that reached the client.
 */
function streamCall(got: Buffer[], leaveAfter?: number): Promise<void> {
  return new Promise((resolve) => {
    const req = http.request(`${s.t.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'sk-ant-cut-000000000000001' }, agent: false }, (res) => {
      let seen = 0
      res.on('data', (c: Buffer) => {
        got.push(c)
        if (leaveAfter !== undefined && ++seen === leaveAfter) {
          req.destroy()
          resolve()
        }
      })
      res.on('close', () => resolve())
      res.on('error', () => resolve())
    })
    req.on('error', () => resolve())
    req.end(BODY)
  })
}

describe('an Anthropic stream cut between message_start and its last message_delta', () => {
  const events = sseChunks(fixture(FILE), false)

  it('upstream reset: exact prompt counts, the output estimated from what streamed, marked estimated', async () => {
    const cutAt = 20 // message_start, content_block_start, ping and 17 text deltas
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: events, resetAfterChunks: cutAt, delayMs: 2 }))
    const got: Buffer[] = []
    const row = await recorded(s.t, () => streamCall(got))
    // The proxy metered at least what reached the client and at most what the upstream sent.
    const least = await estimateOutputTokens(MODEL, streamedText(Buffer.concat(got)))
    const most = await estimateOutputTokens(MODEL, streamedText(Buffer.concat(events.slice(0, cutAt))))
    expect(least).toBeGreaterThan(1)
    expect(row).toMatchObject({
      status: 502,
      error: 'upstream_reset',
      estimated: 1,
      priced: 1,
      input_tokens: 4 + 1165,
      cache_write_tokens: 1165,
      cache_read_tokens: 0,
    })
    expect(row.output_tokens).toBeGreaterThanOrEqual(least)
    expect(row.output_tokens).toBeLessThanOrEqual(most)
    // Less than the 201 the whole answer was billed, more than message_start's 1.
    expect(row.output_tokens).toBeLessThan(201)
    expect(row.cost_usd).toBe(price(row))
  })

  it('the client leaving: the same, with what reached it', async () => {
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: events, delayMs: 40 }))
    const got: Buffer[] = []
    const row = await recorded(s.t, () => streamCall(got, 12))
    expect(row).toMatchObject({ status: 499, error: 'client_aborted', estimated: 1, priced: 1, input_tokens: 4 + 1165, cache_write_tokens: 1165 })
    // At least what reached the client (the proxy may have metered a chunk more before it noticed).
    expect(row.output_tokens).toBeGreaterThanOrEqual(await estimateOutputTokens(MODEL, streamedText(Buffer.concat(got))))
    expect(row.output_tokens).toBeGreaterThan(1)
    expect(row.output_tokens).toBeLessThan(201)
    expect(row.cost_usd).toBe(price(row))
  })

  it('a stream that ends normally keeps the exact counts, not estimated', async () => {
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: events, delayMs: 1 }))
    const row = await recorded(s.t, () => streamCall([]))
    expect(row).toMatchObject({ status: 200, estimated: 0, input_tokens: 4 + 1165, cache_write_tokens: 1165, output_tokens: 201 })
    expect(row.cost_usd).toBe(price(row))
  })
})

describe('a Gemini stream cut before its last event', () => {
  // Each event repeats the running usage; only the last (with finishReason) is the bill.
  const events = sseChunks(fixture('gemini/stream-generate-content.sse'), false)

  it('keeps the running counts of the last event it got, marked estimated', async () => {
    expect(events).toHaveLength(3)
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: events, resetAfterChunks: 2, delayMs: 2 }))
    const got: Buffer[] = []
    const row = await recorded(s.t, async () => {
      await new Promise<void>((resolve) => {
        const req = http.request(`${s.t.url}/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-goog-api-key': 'AIzaSy-cut-000000000000000001' }, agent: false }, (res) => {
          res.on('data', (c: Buffer) => got.push(c))
          res.on('close', () => resolve())
          res.on('error', () => resolve())
        })
        req.on('error', () => resolve())
        req.end(JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'Count to 100' }] }] }))
      })
    })
    expect(row).toMatchObject({ status: 502, error: 'upstream_reset', estimated: 1, priced: 1, input_tokens: 18 })
    // The second event's running count (79 candidates + 35 thoughts), or the first's if the cut came first.
    expect([31 + 35, 79 + 35]).toContain(row.output_tokens)
    const p = calcPrice({ input_tokens: 18, output_tokens: row.output_tokens }, 'gemini-2.5-flash', { providerId: 'google', timestamp: new Date(row.ts) })
    expect(row.cost_usd).toBe(p!.total_price)
  })

  it('a whole Gemini stream is exact', async () => {
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: events, delayMs: 1 }))
    const row = await recorded(s.t, () =>
      new Promise<void>((resolve) => {
        const req = http.request(`${s.t.url}/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-goog-api-key': 'AIzaSy-cut-000000000000000001' }, agent: false }, (res) => {
          res.resume()
          res.on('close', () => resolve())
        })
        req.on('error', () => resolve())
        req.end('{}')
      }),
    )
    expect(row).toMatchObject({ status: 200, estimated: 0, input_tokens: 18, output_tokens: 80 + 35 })
  })
})

describe('an OpenAI-compatible stream with a running usage count in every chunk, cut before it finished', () => {
  // As vLLM (`continuous_usage_stats`) and some OpenAI-compatible APIs stream: every chunk carries
  // the usage so far; the chunk with `finish_reason` carries the bill, then `[DONE]`.
  const WORDS = 30
  const PROMPT = 57
  const chunk = (i: number) => {
    const last = i === WORDS - 1
    const ev = {
      id: 'chatcmpl-running', object: 'chat.completion.chunk', model: 'gpt-4o-mini',
      choices: [{ index: 0, delta: { content: `word${i} ` }, finish_reason: last ? 'stop' : null }],
      usage: { prompt_tokens: PROMPT, completion_tokens: (i + 1) * 2, total_tokens: PROMPT + (i + 1) * 2 },
    }
    return Buffer.from(`data: ${JSON.stringify(ev)}\n\n`)
  }
  const events = [...Array.from({ length: WORDS }, (_, i) => chunk(i)), Buffer.from('data: [DONE]\n\n')]
  const call = () =>
    new Promise<void>((resolve) => {
      const req = http.request(`${s.t.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-cut-running-000000000001' }, agent: false }, (res) => {
        res.resume()
        res.on('close', () => resolve())
        res.on('error', () => resolve())
      })
      req.on('error', () => resolve())
      req.end(JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'Say thirty words.' }] }))
    })
  const price = (row: any) =>
    calcPrice({ input_tokens: row.input_tokens, output_tokens: row.output_tokens }, 'gpt-4o-mini', { providerId: 'openai', timestamp: new Date(row.ts) })!.total_price

  it('upstream reset: the prompt count exact, the output estimated (never below the count so far), marked estimated', async () => {
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: events, resetAfterChunks: 10, delayMs: 2 }))
    const row = await recorded(s.t, call)
    expect(row).toMatchObject({ status: 502, error: 'upstream_reset', estimated: 1, priced: 1, input_tokens: PROMPT })
    // At least the running count of the last chunk metered (1 to 10 chunks got through), and less than the whole answer's.
    expect(row.output_tokens).toBeGreaterThanOrEqual(2)
    expect(row.output_tokens).toBeLessThan(WORDS * 2)
    expect(row.cost_usd).toBe(price(row))
  })

  it('a whole stream keeps the exact counts of its finishing chunk, not estimated', async () => {
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: events, delayMs: 1 }))
    const row = await recorded(s.t, call)
    expect(row).toMatchObject({ status: 200, estimated: 0, input_tokens: PROMPT, output_tokens: WORDS * 2 })
    expect(row.cost_usd).toBe(price(row))
  })
})
