import { calcPrice } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, recorded } from './ledger'

/**
 * What an Anthropic stream says beyond its usage, through a real server and ledger: a stream's
 * own `error` event (Anthropic's streaming docs: the error a call that is not streamed gets as an
 * HTTP 529 or 500, sent in a 200's stream), and usage fields a `message_delta` sends as `null`
 * (the SDK types them `number | null` and keeps the value `message_start` gave).
 */

const s = serverOverMockUpstream()
const MODEL = 'claude-sonnet-4-5-20250929'
const sse = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
const OVERLOADED = sse('error', { error: { type: 'overloaded_error', message: 'Overloaded' } })
const ask = (key: string, content: string) => () =>
  postJson(`${s.t.url}/v1/messages`, { model: 'claude-sonnet-4-5', stream: true, max_tokens: 100, messages: [{ role: 'user', content }] }, { 'x-api-key': key })

describe('an Anthropic stream that ends in an error event', () => {
  it('before message_start: nothing was billed, so the call costs nothing (not an estimate of its prompt) and records the error', async () => {
    answer(s.upstream, OVERLOADED, 'sse')
    const row = await recorded(s.t, ask('sk-ant-errors-0000000001', 'word '.repeat(20_000)))
    expect(row).toMatchObject({ status: 200, error: 'overloaded_error', input_tokens: 0, output_tokens: 0, cost_usd: 0, estimated: 0, priced: 1 })
  })

  it('after message_start: the prompt counts stand, the output is estimated from what streamed, and the error is recorded', async () => {
    const usage = { input_tokens: 1_200, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 }
    const text = 'A partial answer that the overload cut short. '.repeat(20)
    answer(
      s.upstream,
      sse('message_start', { message: { id: 'msg_cut_by_error', type: 'message', role: 'assistant', model: MODEL, content: [], usage } }) +
        sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
        sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text } }) +
        OVERLOADED,
      'sse',
    )
    const row = await recorded(s.t, ask('sk-ant-errors-0000000002', 'hello'))
    expect(row).toMatchObject({ status: 200, error: 'overloaded_error', input_tokens: 1_200, estimated: 1, response_id: 'msg_cut_by_error' })
    // About 200 tokens of text streamed: estimated from it, never below the 1 message_start said.
    expect(row.output_tokens).toBeGreaterThan(100)
    expect(row.cost_usd).toBe(calcPrice({ input_tokens: 1_200, output_tokens: row.output_tokens }, MODEL, { providerId: 'anthropic', timestamp: new Date(row.ts) })!.total_price)
  })

  it("keeps at most 100 characters of an upstream's own error type: the ledger, the metrics' and OTLP's error labels are not an upstream's to fill", async () => {
    answer(s.upstream, sse('error', { error: { type: `weird_${'x'.repeat(20_000)}`, message: 'Overloaded' } }), 'sse')
    const row = await recorded(s.t, ask('sk-ant-errors-0000000004', 'hello'))
    expect(row).toMatchObject({ status: 200, error: `weird_${'x'.repeat(94)}`, cost_usd: 0 })
  })
})

describe('usage fields a message_delta sends as null', () => {
  it('keep the counts message_start gave: the cache write and the prompt are billed', async () => {
    const text = fixture('anthropic/messages-stream-cache-write.sse').toString('utf8')
    const nulled = text.replace(
      '"usage":{"output_tokens":201}',
      '"usage":{"input_tokens":null,"cache_creation_input_tokens":null,"cache_read_input_tokens":null,"output_tokens":201}',
    )
    expect(nulled).not.toBe(text)
    answer(s.upstream, nulled, 'sse')
    const row = await recorded(s.t, ask('sk-ant-errors-0000000003', 'hello'))
    // message_start: 4 input and 1,165 cache-write tokens; message_delta: 201 output.
    expect(row).toMatchObject({ input_tokens: 1_169, cache_write_tokens: 1_165, output_tokens: 201, estimated: 0, error: null })
    answer(s.upstream, text, 'sse')
    const same = await recorded(s.t, ask('sk-ant-errors-0000000003', 'hello'))
    expect(row.cost_usd).toBe(same.cost_usd)
    expect(row.cost_usd).toBeGreaterThan(0.004)
  })
})
