import WebSocket from 'ws'
import { describe, expect, it } from 'vitest'
import { eventually, request } from '../support/http'
import { keyRowsAtLeast, openSocket, rowsOfKey, serverOverWsUpstream } from '../support/ws-sessions'
import { ADMIN_CONFIG, admin } from '../admin/support'

/**
 * OpenAI's Realtime API with server VAD under a `block` rule (README: Budgets, WebSockets), after
 * the first response the server started over the limit was stopped (cancelled upstream, the client
 * told, the socket left open: ./ws-realtime-vad-stop.test.ts). OpenAI bills each cancelled
 * response's prompt (the whole conversation), so a client that goes on streaming its microphone
 * would go on spending past the limit, turn after turn. The next response the server starts while
 * the key is still over its limit is cancelled as well, and the socket is then closed, both sides:
 * the client after the cancelled response's `response.done` (recorded at the usage OpenAI billed),
 * with 1011 and a reason naming the rule. A key whose limit was raised in between goes on.
 */

const RULE = 'sk-vad-close-*'
const RAISED = 'sk-vad-raise-*'
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

/** Every frame each upstream socket got, by the key it was opened with. */
const got = new Map<string, any[]>()
/** Each upstream socket's close code, by key, once closed. */
const upClosed = new Map<string, number>()

const s = serverOverWsUpstream(
  {
    onConnection: (ws, req) => {
      const key = String(req.headers.authorization).replace(/^Bearer /, '')
      const frames: any[] = []
      got.set(key, frames)
      ws.on('close', (code) => upClosed.set(key, code))
      let n = 0
      ws.send(JSON.stringify({ type: 'session.created', event_id: 'event_s0', session: { type: 'realtime', object: 'realtime.session', id: 'sess_vad', model: 'gpt-realtime' } }))
      ws.on('message', (data) => {
        const f = JSON.parse(String(data))
        frames.push(f)
        // Server VAD: the user's speech ends, and the server answers by itself; `END_DONE`: a
        // response that runs to its end, `END`: one that runs until it is cancelled.
        if (f.type === 'input_audio_buffer.append' && (f.audio === 'END' || f.audio === 'END_DONE')) {
          const resp = { object: 'realtime.response', id: `resp_vad${++n}`, status: 'in_progress', output: [], usage: null }
          ws.send(JSON.stringify({ type: 'response.created', event_id: `event_c${n}`, response: resp }))
          ws.send(JSON.stringify({ type: 'response.output_audio.delta', event_id: `event_a${n}`, response_id: resp.id, item_id: `item_${n}`, output_index: 0, content_index: 0, delta: 'AAAA' }))
          if (f.audio === 'END_DONE') ws.send(JSON.stringify({ type: 'response.done', event_id: `event_d${n}`, response: { ...resp, status: 'completed', usage: usage(1000, 200) } }))
        }
        if (f.type === 'response.cancel') {
          // The prompt grows with the conversation: each cancelled response is billed more input.
          const m = Number(String(f.response_id).replace('resp_vad', ''))
          const resp = { object: 'realtime.response', id: f.response_id, status: 'cancelled', status_details: { type: 'cancelled', reason: 'client_cancelled' }, output: [] }
          const done = JSON.stringify({ type: 'response.done', event_id: `event_dc${m}`, response: { ...resp, usage: usage(1000 + 100 * m, 10 * m) } })
          // OpenAI's answer to a cancel comes a moment later, as over a network.
          setTimeout(() => {
            if (ws.readyState === ws.OPEN) ws.send(done)
          }, 50)
        }
      })
    },
  },
  {
    ...ADMIN_CONFIG,
    timezone: 'UTC',
    metrics: { enabled: true },
    budgets: {
      rules: [
        { api_key_pattern: RULE, daily_limit_usd: LIMIT, action: 'block' },
        { api_key_pattern: RAISED, daily_limit_usd: LIMIT, action: 'block' },
      ],
    },
  },
)

const speech = (audio: string) => JSON.stringify({ type: 'input_audio_buffer.append', audio })
const errors = (frames: any[]) => frames.filter((f) => f.type === 'error')

describe('a Realtime socket with server VAD whose key stays over a block limit after a stop', () => {
  it('has the next response the server starts cancelled, its bill recorded, and the socket closed 1011 naming the rule', async () => {
    const key = 'sk-vad-close-0001'
    const c = await openSocket(s.t, '/v1/realtime?model=gpt-realtime', { headers: { authorization: `Bearer ${key}` } })
    // Under the limit: the first response runs to its end, and takes the key over the limit.
    c.ws.send(speech('END_DONE'))
    await keyRowsAtLeast(s.t, key, 1)
    // Over it: the next is stopped, the socket left open (./ws-realtime-vad-stop.test.ts).
    c.ws.send(speech('END'))
    await keyRowsAtLeast(s.t, key, 3)
    await eventually(() => c.frames.some((f) => f.type === 'response.done' && f.response.id === 'resp_vad2'), 10_000)
    expect(errors(c.frames)).toHaveLength(1)
    expect(c.ws.readyState).toBe(WebSocket.OPEN)

    // The client ignores the error and goes on talking: the next response the server starts closes the socket.
    c.ws.send(speech('END'))
    // What it sends once told is not sent upstream.
    await eventually(() => errors(c.frames).length === 2, 10_000)
    c.ws.send(speech('END'))
    let closedWith: { code: number; reason: string } | undefined
    void c.closed.then((x) => (closedWith = x))
    const closed = (await eventually(() => closedWith, 10_000))!
    expect(closed.code).toBe(1011)
    expect(closed.reason).toContain('budget_exceeded')
    expect(closed.reason).toContain(`budget rule "${RULE}"`)
    expect(Buffer.byteLength(closed.reason)).toBeLessThanOrEqual(123)
    // Both sides: the upstream's socket is closed too.
    await eventually(() => upClosed.has(key), 10_000)

    const up = got.get(key)!
    expect(up.filter((f) => f.type === 'response.cancel').map((f) => f.response_id)).toEqual(['resp_vad2', 'resp_vad3'])
    expect(up.filter((f) => f.type === 'input_audio_buffer.append').map((f) => f.audio)).toEqual(['END_DONE', 'END', 'END'])

    // The client had the error, after the response's start, then the cancelled response's end, then the close.
    const second = c.frames.indexOf(errors(c.frames)[1])
    expect(errors(c.frames)[1]).toMatchObject({ status: 429, error: { type: 'budget_exceeded', code: 'budget_exceeded', api_key_pattern: RULE, event_id: null } })
    expect(second).toBeGreaterThan(c.frames.findIndex((f) => f.type === 'response.created' && f.response.id === 'resp_vad3'))
    expect(c.frames.findIndex((f) => f.type === 'response.done' && f.response.id === 'resp_vad3')).toBeGreaterThan(second)

    // Each refusal at $0, each cancelled response at exactly what OpenAI billed for it, none cut short by the close.
    const rows = rowsOfKey(s.t, key)
    expect(rows.map((r) => [r.status, r.error, r.response_id || null])).toEqual([
      [200, null, 'resp_vad1'],
      [429, 'budget_exceeded', null],
      [200, null, 'resp_vad2'],
      [429, 'budget_exceeded', null],
      [200, null, 'resp_vad3'],
    ])
    expect(rows[3]).toMatchObject({ endpoint: 'realtime', model: 'gpt-realtime', cost_usd: 0 })
    expect(rows[4]).toMatchObject({ input_tokens: 1300, output_tokens: 30, estimated: 0 })
    expect(rows[4].cost_usd).toBeCloseTo(cost(1300, 30), 15)
    const metrics = (await request(`${s.t.url}/metrics`)).text
    expect(metrics).toContain(`burnrate_refusals_total{reason="budget_exceeded",rule="${RULE}"} 2`)
  })

  it('goes on when the limit was raised in between: the next response runs to its end and the socket stays open', async () => {
    const key = 'sk-vad-raise-0001'
    const c = await openSocket(s.t, '/v1/realtime?model=gpt-realtime', { headers: { authorization: `Bearer ${key}` } })
    c.ws.send(speech('END_DONE'))
    await keyRowsAtLeast(s.t, key, 1)
    c.ws.send(speech('END'))
    await keyRowsAtLeast(s.t, key, 3)
    await eventually(() => c.frames.some((f) => f.type === 'response.done' && f.response.id === 'resp_vad2'), 10_000)

    // The limit is raised (a runtime rule over the config's): the key is no longer over it.
    expect((await admin(s.t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: RAISED, daily_limit_usd: 100, action: 'block' } })).status).toBe(201)
    c.ws.send(speech('END_DONE'))
    const rows = await keyRowsAtLeast(s.t, key, 4)
    expect(rows[3]).toMatchObject({ status: 200, error: null, response_id: 'resp_vad3', input_tokens: 1000, output_tokens: 200 })
    await eventually(() => c.frames.some((f) => f.type === 'response.done' && f.response.id === 'resp_vad3'), 10_000)
    expect(got.get(key)!.filter((f) => f.type === 'response.cancel').map((f) => f.response_id)).toEqual(['resp_vad2'])
    expect(errors(c.frames)).toHaveLength(1)
    expect(c.ws.readyState).toBe(WebSocket.OPEN)
    expect(upClosed.has(key)).toBe(false)
    c.ws.close()
    await c.closed
    expect(rowsOfKey(s.t, key)).toHaveLength(4)
  })
})
