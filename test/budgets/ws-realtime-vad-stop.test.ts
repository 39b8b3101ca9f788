import WebSocket from 'ws'
import { describe, expect, it } from 'vitest'
import { eventually, request } from '../support/http'
import { keyRowsAtLeast, openSocket, rowsOfKey, serverOverWsUpstream } from '../support/ws-sessions'

/**
 * OpenAI's Realtime API with server VAD under a `block` rule (README: Budgets, WebSockets): the
 * server starts each response by itself at the end of the user's speech, with no
 * `response.create` to refuse. On a socket opened under the limit, once the key's responses have
 * reached it, the next response the server starts is stopped: Burnrate sends the upstream a
 * `response.cancel` for it and the client the Realtime API's `error` event naming the rule, and
 * records the refusal (429 `budget_exceeded`, $0); the cancelled response is recorded at its
 * `response.done` with the usage OpenAI billed, and the socket stays open. Before this, such
 * responses ran to their end, each billed past the limit, until the client closed the socket.
 */

const RULE = 'sk-vad-stop-*'
/** Under one response's cost: gpt-realtime, 1,000 text tokens in ($4/M), 200 audio tokens out ($64/M): $0.0168. */
const LIMIT = 0.01

const usage = (input: number, audioOut: number) => ({
  total_tokens: input + audioOut,
  input_tokens: input,
  output_tokens: audioOut,
  input_token_details: { text_tokens: input, audio_tokens: 0, cached_tokens: 0 },
  output_token_details: { text_tokens: 0, audio_tokens: audioOut },
})
const cost = (input: number, audioOut: number) => (input * 4 + audioOut * 64) / 1e6

/** Every frame the upstream got. */
const got: any[] = []
const s = serverOverWsUpstream(
  {
    onConnection: (ws) => {
      let n = 0
      ws.send(JSON.stringify({ type: 'session.created', event_id: 'event_s0', session: { type: 'realtime', object: 'realtime.session', id: 'sess_vad', model: 'gpt-realtime' } }))
      ws.on('message', (data) => {
        const f = JSON.parse(String(data))
        got.push(f)
        // Server VAD: the user's speech ends, and the server answers by itself.
        if (f.type === 'input_audio_buffer.append' && f.audio === 'END') {
          const resp = { object: 'realtime.response', id: `resp_vad${++n}`, status: 'in_progress', output: [], usage: null }
          ws.send(JSON.stringify({ type: 'response.created', event_id: `event_c${n}`, response: resp }))
          ws.send(JSON.stringify({ type: 'response.output_audio.delta', event_id: `event_a${n}`, response_id: resp.id, item_id: `item_${n}`, output_index: 0, content_index: 0, delta: 'AAAA' }))
          // The first runs to its end; the next one runs until it is cancelled.
          if (n === 1) ws.send(JSON.stringify({ type: 'response.done', event_id: `event_d${n}`, response: { ...resp, status: 'completed', usage: usage(1000, 200) } }))
        }
        if (f.type === 'response.cancel') {
          const resp = { object: 'realtime.response', id: f.response_id, status: 'cancelled', status_details: { type: 'cancelled', reason: 'client_cancelled' }, output: [] }
          ws.send(JSON.stringify({ type: 'response.done', event_id: 'event_dc', response: { ...resp, usage: usage(1100, 10) } }))
        }
      })
    },
  },
  { timezone: 'UTC', metrics: { enabled: true }, budgets: { rules: [{ api_key_pattern: RULE, daily_limit_usd: LIMIT, action: 'block' }] } },
)

const speechEnds = JSON.stringify({ type: 'input_audio_buffer.append', audio: 'END' })

describe('a Realtime socket with server VAD whose key reaches a block limit', () => {
  it('has the next response the server starts cancelled upstream, the client told why, the refusal and the cancelled response’s bill recorded', async () => {
    const key = 'sk-vad-stop-0001'
    const c = await openSocket(s.t, '/v1/realtime?model=gpt-realtime', { headers: { authorization: `Bearer ${key}` } })
    c.ws.send(speechEnds)
    const [first] = await keyRowsAtLeast(s.t, key, 1)
    // Under the limit when it began: it ran to its end, uncancelled, billed in full.
    expect(first).toMatchObject({ endpoint: 'realtime', status: 200, error: null, response_id: 'resp_vad1' })
    expect(first.cost_usd).toBeCloseTo(cost(1000, 200), 15)
    expect(first.cost_usd).toBeGreaterThan(LIMIT)

    c.ws.send(speechEnds)
    const rows = await keyRowsAtLeast(s.t, key, 3)
    expect(got.filter((f) => f.type === 'response.cancel').map((f) => f.response_id)).toEqual(['resp_vad2'])
    // The refusal, at $0, then the cancelled response with what OpenAI billed for it.
    expect(rows.map((r) => [r.status, r.error, r.response_id || null])).toEqual([
      [200, null, 'resp_vad1'],
      [429, 'budget_exceeded', null],
      [200, null, 'resp_vad2'],
    ])
    expect(rows[1]).toMatchObject({ endpoint: 'realtime', model: 'gpt-realtime', cost_usd: 0 })
    expect(rows[2]).toMatchObject({ input_tokens: 1100, output_tokens: 10, estimated: 0 })
    expect(rows[2].cost_usd).toBeCloseTo(cost(1100, 10), 15)

    // The client had the Realtime API's error event naming the rule, after the response's start, and then its end.
    await eventually(() => c.frames.some((f) => f.type === 'response.done' && f.response.id === 'resp_vad2'), 10_000)
    const error = c.frames.find((f) => f.type === 'error')
    expect(error).toMatchObject({ status: 429, error: { type: 'budget_exceeded', code: 'budget_exceeded', api_key_pattern: RULE, event_id: null } })
    expect(error.error.message).toContain(RULE)
    expect(c.frames.findIndex((f) => f.type === 'error')).toBeGreaterThan(c.frames.findIndex((f) => f.type === 'response.created' && f.response.id === 'resp_vad2'))
    // The socket goes on, as after a refused response.create.
    expect(c.ws.readyState).toBe(WebSocket.OPEN)
    const metrics = (await request(`${s.t.url}/metrics`)).text
    expect(metrics).toContain(`burnrate_refusals_total{reason="budget_exceeded",rule="${RULE}"} 1`)
    c.ws.close()
    await c.closed
    expect(rowsOfKey(s.t, key)).toHaveLength(3)
  })
})
