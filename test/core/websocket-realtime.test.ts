import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { openSocket, rowsAfter, serverOverWsUpstream } from '../support/ws-sessions'

/**
 * OpenAI's Realtime API over Burnrate's WebSocket relay (README: WebSockets): each `response.done`
 * is one call with its usage priced per modality, each input transcription one more at the
 * transcription model's rates, a client's `response.create` is gated by the budgets, and a
 * response the server starts by itself (server VAD) is recorded all the same. The upstream replays
 * the server events of test/fixtures/openai-realtime (README there).
 */

const events = (name: string) => readFileSync(join(__dirname, '../fixtures/openai-realtime', name), 'utf8').trim().split('\n')
const GA = events('ga-server-vad-turn.jsonl')
const BETA = events('beta-response-create.jsonl')

/** Every frame the upstream got, per socket, and each socket's upgrade request. */
const seen: { url: string; beta: string; frames: any[] }[] = []
/** What the upstream does with a client frame: the GA socket answers audio, the beta one a response.create. */
const s = serverOverWsUpstream(
  {
    onConnection: (ws, req) => {
      // The beta interface, asked for by header, or (a browser) by subprotocol.
      const beta = String(req.headers['openai-beta'] ?? '') || (String(req.headers['sec-websocket-protocol']).includes('openai-beta.realtime-v1') ? 'realtime=v1' : '')
      const me = { url: req.url ?? '', beta, frames: [] as any[] }
      seen.push(me)
      // A beta transcription-only session: its own session event, then a transcription of each commit.
      if (me.url.includes('intent=transcription')) {
        ws.send(JSON.stringify({ type: 'transcription_session.created', event_id: 'event_T0', session: { id: 'sess_T', object: 'realtime.transcription_session', input_audio_format: 'pcm16', input_audio_transcription: { model: 'gpt-4o-mini-transcribe', language: 'en', prompt: '' }, turn_detection: { type: 'server_vad' } } }))
        ws.on('message', () => ws.send(GA[16]))
        return
      }
      const script = me.beta ? BETA : GA
      // The server speaks first: its session.
      ws.send(script[0])
      ws.on('message', (data) => {
        const f = JSON.parse(String(data))
        me.frames.push(f)
        if (f.type === 'session.update' && script === GA) ws.send(GA[1])
        // Server VAD: the user's speech ends, the server commits it and answers by itself.
        if (f.type === 'input_audio_buffer.append' && f.audio === 'END' && script === GA) for (const e of GA.slice(2)) ws.send(e)
        // A response that begins and streams, and never ends.
        if (f.type === 'response.create' && f.event_id === 'evt_hang' && script === GA) {
          ws.send(JSON.stringify({ type: 'response.created', event_id: 'event_H1', response: { object: 'realtime.response', id: 'resp_hang', status: 'in_progress', output: [], usage: null } }))
          ws.send(JSON.stringify({ type: 'response.output_audio.delta', event_id: 'event_H2', response_id: 'resp_hang', item_id: 'item_h', output_index: 0, content_index: 0, delta: 'AAAA' }))
        }
        if (f.type === 'response.create' && script === BETA) {
          if (f.event_id === 'evt_nousage') {
            // An older beta session's transcription, without usage; then the response.
            ws.send(JSON.stringify({ type: 'conversation.item.input_audio_transcription.completed', event_id: 'event_N1', item_id: 'item_n', content_index: 0, transcript: 'Hello?' }))
            for (const e of BETA.slice(2)) ws.send(e)
          } else if (f.event_id === 'evt_busy') {
            ws.send(JSON.stringify({ type: 'error', event_id: 'event_B3Lq', error: { type: 'invalid_request_error', code: 'conversation_already_has_active_response', message: 'Conversation already has an active response in progress.', param: null, event_id: 'evt_busy' } }))
          } else for (const e of BETA.slice(1)) ws.send(e)
        }
      })
    },
  },
  {
    budgets: {
      rules: [
        { api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' },
        { api_key_pattern: 'sk-small-*', daily_limit_usd: 0.005, action: 'block' },
        { api_key_pattern: 'sk-rpm-*', requests_per_minute: 1, action: 'block' },
      ],
    },
  },
)

const open = (query: string, key: string, headers: Record<string, string> = {}) => openSocket(s.t, `/v1/realtime?${query}`, { headers: { authorization: `Bearer ${key}`, ...headers } })

describe('a Realtime API socket', () => {
  it('GA, server VAD: the response no client frame asked for is recorded at its response.done, per modality, and the input transcription at its own model', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await open('model=gpt-realtime', 'sk-test-realtime-0001', { 'x-burnrate-agent': 'voice-bot', 'x-burnrate-session': 'call-42' })
    c.ws.send(JSON.stringify({ type: 'session.update', session: { type: 'realtime', audio: { input: { transcription: { model: 'gpt-4o-transcribe' } } } } }))
    await eventually(() => c.frames.some((f) => f.type === 'session.updated'), 10_000)
    c.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: 'AAAAAP//AAABAP7/' }))
    c.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: 'END' }))
    const rows = await rowsAfter(s.t, before, 2)
    // Every server event reached the client, unchanged.
    await eventually(() => c.frames.length === GA.length, 10_000)
    expect(c.frames.map((f) => JSON.stringify(f))).toEqual(GA)
    c.ws.close()
    const byEndpoint = Object.fromEntries(rows.map((r) => [r.endpoint, r]))
    const common = { provider: 'openai', status: 200, agent: 'voice-bot', session: 'call-42', key_hint: expect.stringContaining('0001'), estimated: 0, priced: 1 }
    // OpenAI's own example usage: input 132 (text 119, audio 13; cached 64, all text), output 121 (text 30, audio 91).
    expect(byEndpoint.realtime).toMatchObject({ ...common, model: 'gpt-realtime', input_tokens: 132, cache_read_tokens: 64, output_tokens: 121, response_id: 'resp_C9G5j2GqE8Qo3Zz3Xt1Kd' })
    // gpt-realtime: text $4/M (cached $0.40/M), audio $32/M; output text $16/M, audio $64/M.
    expect(byEndpoint.realtime.cost_usd).toBeCloseTo((55 * 4 + 64 * 0.4 + 13 * 32 + 30 * 16 + 91 * 64) / 1e6, 15)
    expect(JSON.parse(byEndpoint.realtime.usage_extra)).toMatchObject({ extra: { input_audio_tokens: 13, output_audio_tokens: 91 } })
    // The transcription: 17 audio tokens in, 9 text tokens out, at gpt-4o-transcribe's $6/M audio and $10/M output.
    expect(byEndpoint['realtime.transcription']).toMatchObject({ ...common, model: 'gpt-4o-transcribe', input_tokens: 17, output_tokens: 9 })
    expect(byEndpoint['realtime.transcription'].cost_usd).toBeCloseTo((17 * 6 + 9 * 10) / 1e6, 15)
    expect(seen.at(-1)!.url).toBe('/v1/realtime?model=gpt-realtime')
  })

  it('beta (OpenAI-Beta: realtime=v1): a response.create is admitted and its response recorded at the model the session names; whisper-1 by its seconds', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await open('model=gpt-4o-realtime-preview', 'sk-test-realtime-0002', { 'openai-beta': 'realtime=v1' })
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_1', response: { modalities: ['audio', 'text'] } }))
    const rows = await rowsAfter(s.t, before, 2)
    c.ws.close()
    const byEndpoint = Object.fromEntries(rows.map((r) => [r.endpoint, r]))
    // input 1,204 (text 1,120 of which 1,024 cached, audio 84), output 262 (text 58, audio 204).
    expect(byEndpoint.realtime).toMatchObject({ status: 200, model: 'gpt-4o-realtime-preview-2024-12-17', input_tokens: 1_204, cache_read_tokens: 1_024, output_tokens: 262, estimated: 0 })
    // gpt-4o-realtime-preview: text $5/M (cached $2.50/M), audio $40/M; output text $20/M, audio $80/M.
    expect(byEndpoint.realtime.cost_usd).toBeCloseTo((96 * 5 + 1_024 * 2.5 + 84 * 40 + 58 * 20 + 204 * 80) / 1e6, 15)
    // whisper-1: $0.006 a minute, 2.4 s.
    expect(byEndpoint['realtime.transcription']).toMatchObject({ status: 200, model: 'whisper-1', priced: 1 })
    expect(byEndpoint['realtime.transcription'].cost_usd).toBeCloseTo((2.4 / 60) * 0.006, 15)
    expect(seen.at(-1)!.frames.map((f) => f.type)).toEqual(['response.create'])
  })

  it('a key over its block limit is refused the socket itself: HTTP 429 with the refusal, recorded at $0, the upstream never asked', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const sockets = seen.length
    const answer = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const ws = new WebSocket(`${s.t.url.replace('http', 'ws')}/v1/realtime?model=gpt-realtime`, { headers: { authorization: 'Bearer sk-blocked-realtime-0001' } })
      ws.on('unexpected-response', (_req, res) => {
        const parts: Buffer[] = []
        res.on('data', (d: Buffer) => parts.push(d))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(parts).toString()) }))
      })
      ws.on('open', () => reject(new Error('opened')))
      ws.on('error', () => {})
    })
    expect(answer).toMatchObject({ status: 429, body: { error: { type: 'budget_exceeded' } } })
    const [row] = await rowsAfter(s.t, before, 1)
    expect(row).toMatchObject({ endpoint: 'realtime', model: 'gpt-realtime', status: 429, error: 'budget_exceeded', cost_usd: 0, key_hint: expect.stringContaining('0001') })
    expect(seen.length).toBe(sockets)
  })

  it("an admitted socket's check counts no request and holds nothing: under requests_per_minute 1, its first response.create goes through, its second is refused", async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await open('model=gpt-4o-realtime-preview-2024-12-17', 'sk-rpm-realtime-0001', { 'openai-beta': 'realtime=v1' })
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_1' }))
    await eventually(() => c.frames.some((f) => f.type === 'response.done'), 10_000)
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_2' }))
    await eventually(() => c.frames.some((f) => f.type === 'error'), 10_000)
    expect(c.frames.find((f) => f.type === 'error')).toMatchObject({ status: 429, error: { type: 'rate_limited', event_id: 'evt_2' } })
    const rows = await rowsAfter(s.t, before, 3)
    expect(rows.filter((r) => r.endpoint === 'realtime').map((r) => r.status)).toEqual([200, 429])
    c.ws.close()
    await eventually(() => s.t.server.proxy.active === 0, 10_000)
  })

  it('a key that goes over its block limit mid-session: its response.create is answered with an error event and not sent, and a response the server starts (VAD) is cancelled, and recorded at what it cost', async () => {
    const before = ledgerRows(s.t.dbFile).length
    // $0.005 a day: the first turn ($0.0070) takes it over.
    const c = await open('model=gpt-realtime', 'sk-small-realtime-0001')
    c.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: 'END' }))
    await rowsAfter(s.t, before, 2)
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_7' }))
    c.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: 'AAAA' }))
    await eventually(() => c.frames.some((f) => f.type === 'error'), 10_000)
    expect(c.frames.find((f) => f.type === 'error')).toMatchObject({ status: 429, error: { type: 'budget_exceeded', code: 'budget_exceeded', event_id: 'evt_7' } })
    const [refused] = (await rowsAfter(s.t, before, 3)).slice(2)
    expect(refused).toMatchObject({ endpoint: 'realtime', model: 'gpt-realtime', status: 429, cost_usd: 0 })
    // The append went on; the response.create did not.
    await eventually(() => seen.at(-1)!.frames.length === 2, 10_000)
    expect(seen.at(-1)!.frames.map((f) => f.type)).toEqual(['input_audio_buffer.append', 'input_audio_buffer.append'])
    // The user speaks again: the server answers by itself, and that response is cancelled (the
    // client told why), the refusal recorded; this upstream ends it all the same, recorded at its cost.
    c.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: 'END' }))
    const rows = await rowsAfter(s.t, before, 6)
    expect(rows.filter((r) => r.endpoint === 'realtime' && r.status === 200)).toHaveLength(2)
    expect(rows.filter((r) => r.endpoint === 'realtime' && r.status === 429)).toHaveLength(2)
    await eventually(() => seen.at(-1)!.frames.some((f) => f.type === 'response.cancel'), 10_000)
    expect(seen.at(-1)!.frames.find((f) => f.type === 'response.cancel')).toMatchObject({ response_id: 'resp_C9G5j2GqE8Qo3Zz3Xt1Kd' })
    await eventually(() => c.frames.filter((f) => f.type === 'error').length === 2, 10_000)
    expect(c.frames.filter((f) => f.type === 'error')[1]).toMatchObject({ status: 429, error: { type: 'budget_exceeded', api_key_pattern: 'sk-small-*', event_id: null } })
    expect(c.ws.readyState).toBe(WebSocket.OPEN)
    c.ws.close()
  })

  it("a response.create the upstream refuses (an error naming its event_id) is recorded with the error at $0, and the socket's next response is its own", async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await open('model=gpt-4o-realtime-preview-2024-12-17', 'sk-test-realtime-0003', { 'openai-beta': 'realtime=v1' })
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_busy' }))
    const [refused] = await rowsAfter(s.t, before, 1)
    expect(refused).toMatchObject({ endpoint: 'realtime', status: 400, error: 'conversation_already_has_active_response', cost_usd: 0 })
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_2' }))
    const rows = await rowsAfter(s.t, before, 3)
    c.ws.close()
    expect(rows.filter((r) => r.endpoint === 'realtime' && r.status === 200)).toMatchObject([{ input_tokens: 1_204, output_tokens: 262 }])
  })

  it('a response cut by the client closing the socket is recorded 499', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await open('model=gpt-realtime', 'sk-test-realtime-0004')
    // The GA upstream never answers a response.create: the response is asked for, then the client leaves.
    c.ws.send(JSON.stringify({ type: 'response.create' }))
    await eventually(() => seen.at(-1)!.frames.length === 1, 10_000)
    c.ws.close()
    const [row] = await rowsAfter(s.t, before, 1)
    expect(row).toMatchObject({ endpoint: 'realtime', status: 499, cost_usd: 0 })
  })

  it("a response cut by the socket's close after a turn: recorded 499, estimated, at least the conversation so far as its prompt", async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await open('model=gpt-realtime', 'sk-test-realtime-0006')
    c.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: 'END' }))
    // (The turn, and its transcription: of a model this socket's session never named, so unpriced.)
    const turn = await rowsAfter(s.t, before, 2)
    expect(turn.find((r) => r.endpoint === 'realtime.transcription')).toMatchObject({ model: '', priced: 0, input_tokens: 17 })
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_hang' }))
    await eventually(() => c.frames.some((f) => f.type === 'response.output_audio.delta' && f.response_id === 'resp_hang'), 10_000)
    c.ws.close()
    const rows = (await rowsAfter(s.t, before, 3)).filter((r) => r.endpoint === 'realtime')
    // The turn before it: prompt 132 (audio 13, cached 64), output 121 (audio 91). Its conversation, 253 tokens (104 of them audio), is the cut one's prompt.
    expect(rows[1]).toMatchObject({ endpoint: 'realtime', model: 'gpt-realtime', status: 499, estimated: 1, input_tokens: 253, cache_read_tokens: 64, output_tokens: 0 })
    expect(JSON.parse(rows[1].usage_extra)).toMatchObject({ extra: { input_audio_tokens: 104 } })
    expect(rows[1].cost_usd).toBeCloseTo((85 * 4 + 64 * 0.4 + 104 * 32) / 1e6, 15)
  })

  it('a transcription event without usage (the beta before OpenAI added it) is not recorded: nothing to bill by', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await open('model=gpt-4o-realtime-preview-2024-12-17', 'sk-test-realtime-0007', { 'openai-beta': 'realtime=v1' })
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_nousage' }))
    await eventually(() => c.frames.some((f) => f.type === 'response.done'), 10_000)
    const rows = await rowsAfter(s.t, before, 1)
    // The transcription came before the response.done, so were it recorded it would be here.
    expect(rows.map((r) => r.endpoint)).toEqual(['realtime'])
    c.ws.close()
  })

  it("a browser's key, offered as a subprotocol (openai-insecure-api-key.<key>), is the key its calls are recorded and budgeted as", async () => {
    const before = ledgerRows(s.t.dbFile).length
    const offer = (key: string) => ['realtime', `openai-insecure-api-key.${key}`, 'openai-beta.realtime-v1']
    const open2 = (key: string) => openSocket(s.t, '/v1/realtime?model=gpt-4o-realtime-preview-2024-12-17', { protocols: offer(key) })
    // Over its block limit: refused the socket.
    await expect(open2('sk-blocked-realtime-proto-0009')).rejects.toThrow(/429/)
    const ok = await open2('sk-test-realtime-proto-0008')
    expect(ok.ws.protocol).toBe('realtime')
    ok.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_1' }))
    const rows = await rowsAfter(s.t, before, 3)
    ok.ws.close()
    expect(rows[0]).toMatchObject({ status: 429, key_hint: expect.stringContaining('0009') })
    expect(rows.filter((r) => r.status === 200).map((r) => r.key_hint)).toEqual([expect.stringContaining('0008'), expect.stringContaining('0008')])
  })

  it('a beta transcription-only session (?intent=transcription): each transcription recorded at the model its transcription_session.created names', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await open('intent=transcription', 'sk-test-realtime-0010', { 'openai-beta': 'realtime=v1' })
    c.ws.send(JSON.stringify({ type: 'input_audio_buffer.commit' }))
    const [row] = await rowsAfter(s.t, before, 1)
    c.ws.close()
    // gpt-4o-mini-transcribe: audio in $3/M, output $5/M; 17 audio tokens in, 9 out.
    expect(row).toMatchObject({ endpoint: 'realtime.transcription', model: 'gpt-4o-mini-transcribe', input_tokens: 17, output_tokens: 9, priced: 1 })
    expect(row.cost_usd).toBeCloseTo((17 * 3 + 9 * 5) / 1e6, 15)
  })

  // xAI's and Azure's are metered as OpenAI's: test/core/websocket-realtime-azure-xai.test.ts.
  it("another provider's realtime path (Together's) is relayed as before: not gated at the upgrade, nothing recorded", async () => {
    const before = ledgerRows(s.t.dbFile).length
    const { ws, frames } = await openSocket(s.t, '/together/v1/realtime?model=some-voice', { headers: { authorization: 'Bearer sk-blocked-realtime-0011' } })
    // Its turn, usage and all, passes through; the socket was opened for a key over its limit.
    ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: 'END' }))
    await eventually(() => frames.some((f) => f.type === 'response.done'), 10_000)
    ws.close()
    expect(ledgerRows(s.t.dbFile).length).toBe(before)
  })
})
