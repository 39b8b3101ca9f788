import { describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { eventually } from '../support/http'
import { openSocket, serverOverWsUpstream } from '../support/ws-sessions'

/**
 * A client's WebSocket frame that names a key twice (`{"type":"response.create","type":"x"}`):
 * JSON.parse reads the last value, a parser upstream may read the first (or refuse the frame). The
 * budgets gated what Burnrate read, so a `response.create` spelled first went upstream ungated
 * (past a `block` rule at $0, past `requests_per_minute`), and one spelled last was refused or
 * metered while the upstream did not act on it. A frame Burnrate reads with a key named twice at
 * its top level is refused now, in the socket's own error event, and not sent upstream.
 *
 * The upstream here reads a frame's first `type`, as such a parser does.
 */

/** What the upstream acted on: each frame whose first `type` is `response.create`, per path. */
const created: { path: string; frame: string }[] = []
let responses = 0
let sockets = 0

const firstType = (text: string) => /"type"\s*:\s*"([^"]*)"/.exec(text)?.[1]

const s = serverOverWsUpstream(
  {
    onConnection: (ws, req) => {
      sockets++
      const path = (req.url ?? '').split('?')[0]
      if (path.endsWith('/realtime')) ws.send(JSON.stringify({ type: 'session.created', event_id: 'event_S0', session: { object: 'realtime.session', model: 'gpt-realtime' } }))
      ws.on('message', (data) => {
        const text = String(data)
        if (firstType(text) !== 'response.create') return
        created.push({ path, frame: text })
        const id = `resp_dup${++responses}`
        if (path.endsWith('/realtime')) {
          ws.send(JSON.stringify({ type: 'response.created', event_id: `event_${id}a`, response: { object: 'realtime.response', id, status: 'in_progress', output: [], usage: null } }))
          const usage = { total_tokens: 30, input_tokens: 20, output_tokens: 10, input_token_details: { text_tokens: 20, audio_tokens: 0, cached_tokens: 0 }, output_token_details: { text_tokens: 10, audio_tokens: 0 } }
          ws.send(JSON.stringify({ type: 'response.done', event_id: `event_${id}b`, response: { object: 'realtime.response', id, status: 'completed', output: [], usage } }))
          return
        }
        const resp = { id, object: 'response', model: 'gpt-5-2025-08-07', status: 'in_progress' }
        ws.send(JSON.stringify({ type: 'response.created', sequence_number: 0, response: resp }))
        const usage = { input_tokens: 20, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 25 }
        ws.send(JSON.stringify({ type: 'response.completed', sequence_number: 1, response: { ...resp, status: 'completed', usage } }))
      })
    },
  },
  {
    budgets: {
      rules: [
        { api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' },
        { api_key_pattern: 'sk-rpm-*', requests_per_minute: 1, action: 'block' },
        { api_key_pattern: 'sk-model-*', model_pattern: 'gpt-realtime', daily_limit_usd: 0, action: 'block' },
      ],
    },
  },
)

const responsesSocket = (key: string) =>
  openSocket(s.t, '/v1/responses', { headers: { authorization: `Bearer ${key}`, 'user-agent': 'codex_exec/0.169.0', 'openai-beta': 'responses_websockets=2026-02-06' } })

const input = '"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]'

describe('a client frame naming a key twice', () => {
  it('on a Responses socket: refused with a 400 error frame and not sent upstream, whichever of its types is the response.create', async () => {
    const c = await responsesSocket('sk-blocked-dup-0001')
    // The same response.create, named once: refused by the block rule (the budgets see it).
    c.ws.send(`{"type":"response.create","model":"gpt-5",${input}}`)
    await eventually(() => c.frames.length === 1)
    expect(c.frames[0]).toMatchObject({ type: 'error', status: 429 })

    const frames = [
      // The upstream reads the first: a response.create Burnrate read as something else.
      `{"type":"response.create","model":"gpt-5",${input},"type":"response.cancel"}`,
      // The reverse: Burnrate read a response.create the upstream may not act on.
      `{"type":"response.cancel","model":"gpt-5",${input},"type":"response.create"}`,
      // A key named twice only once its escapes are read.
      `{"type":"response.cancel","typ\\u0065":"response.create","model":"gpt-5",${input}}`,
      // A model named twice: the budgets would check one, the upstream may run the other.
      `{"type":"response.create","model":"gpt-5-nano","model":"gpt-5",${input}}`,
      `{"type":"response.create","model":"gpt-5","previous_response_id":"resp_a","previous_response_id":"resp_b",${input}}`,
    ]
    for (const f of frames) {
      const n = c.frames.length
      c.ws.send(f)
      await eventually(() => c.frames.length > n)
      expect(c.frames[n]).toMatchObject({ type: 'error', status: 400, error: { type: 'invalid_request' } })
      expect(c.frames[n].error.message).toMatch(/more than once/)
    }
    // The socket stays open, and a frame named once still goes (refused by its rule, as before).
    c.ws.send(`{"type":"response.create","model":"gpt-5",${input}}`)
    await eventually(() => c.frames.length === frames.length + 2)
    expect(c.frames.at(-1)).toMatchObject({ type: 'error', status: 429 })
    expect(created.filter((x) => x.path.endsWith('/responses'))).toEqual([])
    c.ws.close()
  })

  it('a key named twice inside a value (an input item’s own type) is no duplicate: the frame goes upstream', async () => {
    const c = await responsesSocket('sk-test-dup-0003')
    c.ws.send(`{"type":"response.create","model":"gpt-5",${input}}`)
    await eventually(() => c.frames.some((f) => f.type === 'response.completed' || f.type === 'error'))
    expect(c.frames.map((f) => f.type)).toEqual(['response.created', 'response.completed'])
    c.ws.close()
  })

  it('on a Realtime socket: refused with the Realtime API’s error event, naming the frame, and not sent upstream', async () => {
    const before = created.length
    const c = await openSocket(s.t, '/v1/realtime?model=gpt-realtime', { headers: { authorization: 'Bearer sk-rpm-dup-0002' } })
    await eventually(() => c.frames.some((f) => f.type === 'session.created'))
    // The key's one request this minute.
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_1' }))
    await eventually(() => c.frames.some((f) => f.type === 'response.done'))
    expect(created.length).toBe(before + 1)
    // A second one, named once: refused by requests_per_minute.
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_2' }))
    await eventually(() => c.frames.some((f) => f.type === 'error'))
    expect(c.frames.find((f) => f.type === 'error')).toMatchObject({ status: 429, error: { event_id: 'evt_2' } })

    const n = c.frames.length
    c.ws.send('{"type":"response.create","event_id":"evt_dup","type":"conversation.item.retrieve","item_id":"item_1"}')
    await eventually(() => c.frames.length > n)
    expect(c.frames[n]).toMatchObject({ type: 'error', status: 400, error: { type: 'invalid_request', event_id: 'evt_dup' } })
    // Something the relay passes after it, to be sure the refused frame would have arrived before.
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_3' }))
    await eventually(() => c.frames.filter((f) => f.type === 'error').length === 3)
    expect(created.length).toBe(before + 1)
    c.ws.close()
  })

  it('a Realtime upgrade naming its model twice in its query is refused 400, not opened upstream', async () => {
    const upgrade = (query: string) =>
      new Promise<number>((resolve) => {
        const ws = new WebSocket(`${s.t.url.replace('http', 'ws')}/v1/realtime?${query}`, { headers: { authorization: 'Bearer sk-model-dup-0004' } })
        ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0))
        ws.on('open', () => {
          resolve(101)
          ws.close()
        })
        ws.on('error', () => {})
      })
    const opened = sockets
    // Named once: its model's rule refuses the socket.
    expect(await upgrade('model=gpt-realtime')).toBe(429)
    // Burnrate's budgets read one, the upstream may run the other.
    expect(await upgrade('model=gpt-realtime-mini&model=gpt-realtime')).toBe(400)
    expect(await upgrade('model=gpt-realtime&mod%65l=gpt-realtime-mini')).toBe(400)
    expect(sockets).toBe(opened)
  })
})
