import { describe, expect, it } from 'vitest'
import { keyRowsAtLeast, openSocket, serverOverWsUpstream } from '../support/ws-sessions'

/**
 * A Realtime API `response.done` that carries no `usage` (README: the Realtime API): OpenAI bills
 * what the response generated all the same, so it is estimated, as a response cut before its
 * `response.done` is, from what it produced. The upstream plays the events a client's `test.play`
 * frame lists (passed upstream unread, as any client frame but `response.create`).
 */

const s = serverOverWsUpstream({
  onConnection: (ws) => {
    ws.on('message', (data) => {
      const text = String(data)
      if (!text.startsWith('{"type":"test.play"')) return
      for (const e of JSON.parse(text).events) ws.send(JSON.stringify(e))
    })
  },
})

const open = (key: string) => openSocket(s.t, '/v1/realtime?model=gpt-realtime', { headers: { authorization: `Bearer ${key}` } })

const usage = (input: number, output: number) => ({
  total_tokens: input + output,
  input_tokens: input,
  output_tokens: output,
  input_token_details: { text_tokens: input, audio_tokens: 0, cached_tokens: 0 },
  output_token_details: { text_tokens: output, audio_tokens: 0 },
})
const ANSWER = 'The forecast for Oslo is rain through the evening, clearing by morning, with a light wind from the west.'
const done = (id: string, status: string, u: unknown, output: unknown[], extra: Record<string, unknown> = {}) => ({
  type: 'response.done',
  event_id: `ed_${id}`,
  response: { object: 'realtime.response', id, status, status_details: null, output, ...(u === undefined ? {} : { usage: u }), ...extra },
})
const message = (part: Record<string, unknown>) => ({ id: 'item_1', object: 'realtime.item', type: 'message', role: 'assistant', status: 'completed', content: [part] })
const play = (...events: unknown[]) => JSON.stringify({ type: 'test.play', events })

describe('a Realtime API response.done without usage', () => {
  it('is estimated: its prompt at least the conversation after the last response that ended, its output from what it produced', async () => {
    const key = 'sk-test-rt-nousage-0001'
    const c = await open(key)
    c.ws.send(
      play(
        done('resp_1', 'completed', usage(1000, 100), [message({ type: 'output_text', text: 'Hello.' })]),
        done('resp_2', 'completed', null, [message({ type: 'output_audio', transcript: ANSWER })]),
      ),
    )
    const [first, second] = await keyRowsAtLeast(s.t, key, 2)
    c.ws.close()
    expect(first).toMatchObject({ response_id: 'resp_1', status: 200, input_tokens: 1000, output_tokens: 100, estimated: 0 })
    // The conversation after resp_1: its prompt and its output, read again.
    expect(second).toMatchObject({ response_id: 'resp_2', status: 200, input_tokens: 1100, estimated: 1 })
    expect(second.output_tokens).toBeGreaterThan(10)
    // gpt-realtime: text $4/M in, $16/M out.
    expect(second.cost_usd).toBeCloseTo((1100 * 4 + second.output_tokens * 16) / 1e6, 15)
  })

  it("the socket's first, without its usage key at all: estimated from what it produced (a function call's arguments)", async () => {
    const key = 'sk-test-rt-nousage-0002'
    const c = await open(key)
    const call = { id: 'item_2', object: 'realtime.item', type: 'function_call', status: 'completed', name: 'get_weather', call_id: 'call_1', arguments: JSON.stringify({ city: 'Oslo', days: 3, units: 'metric', detail: ANSWER }) }
    c.ws.send(play(done('resp_3', 'completed', undefined, [call])))
    const [row] = await keyRowsAtLeast(s.t, key, 1)
    c.ws.close()
    expect(row).toMatchObject({ response_id: 'resp_3', status: 200, estimated: 1 })
    expect(row.output_tokens).toBeGreaterThan(10)
    expect(row.cost_usd).toBeGreaterThan(0)
  })

  it('a failed one that produced nothing is the refusal it reports: $0, not estimated', async () => {
    const key = 'sk-test-rt-nousage-0003'
    const c = await open(key)
    c.ws.send(play(done('resp_4', 'failed', null, [], { status_details: { type: 'failed', error: { type: 'invalid_request_error', code: 'insufficient_quota' } } })))
    const [row] = await keyRowsAtLeast(s.t, key, 1)
    c.ws.close()
    expect(row).toMatchObject({ response_id: 'resp_4', status: 200, error: 'insufficient_quota', cost_usd: 0, estimated: 0 })
  })
})
