import { describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { openSocket, rowsAfterAtLeast, serverOverWsUpstream } from '../support/ws-sessions'

/**
 * A Realtime API socket whose upstream plays the events the client asks it for (a `test.play`
 * frame, passed through unread like any client frame): the upstream's side of a session written
 * by each test.
 */

/** Each upstream socket's upgrade request headers and the frames it got. */
const seen: { headers: Record<string, any>; frames: Buffer[] }[] = []

const s = serverOverWsUpstream(
  {
    onConnection: (ws, req) => {
      const me = { headers: req.headers, frames: [] as Buffer[] }
      seen.push(me)
      ws.on('message', (data, isBinary) => {
        me.frames.push(data as Buffer)
        // `echo=1`: every frame is sent back as it came (text as text, binary as binary).
        if (req.url?.includes('echo=1')) return ws.send(data as Buffer, { binary: isBinary })
        if (isBinary) return
        const text = String(data)
        // `answer=1`: each response.create (however its JSON is written) is answered with a response.
        if (req.url?.includes('answer=1') && JSON.parse(text).type === 'response.create') {
          const id = `resp_${me.frames.length}`
          const usage = { total_tokens: 1100, input_tokens: 1000, output_tokens: 100, input_token_details: { text_tokens: 1000, audio_tokens: 0, cached_tokens: 0 }, output_token_details: { text_tokens: 100, audio_tokens: 0 } }
          ws.send(JSON.stringify({ type: 'response.created', event_id: `ec_${id}`, response: { object: 'realtime.response', id, status: 'in_progress', output: [], usage: null } }))
          ws.send(JSON.stringify({ type: 'response.done', event_id: `ed_${id}`, response: { object: 'realtime.response', id, status: 'completed', output: [], usage } }))
        }
        if (!text.startsWith('{"type":"test.play"')) return
        for (const e of JSON.parse(text).events) ws.send(typeof e === 'string' ? e : JSON.stringify(e))
      })
    },
  },
  {
    budgets: {
      rules: [
        { api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' },
        { api_key_pattern: 'sk-rpm-*', requests_per_minute: 1, action: 'block' },
      ],
    },
  },
)

const open = (query: string, headers: Record<string, string>, protocols: string[] = []) => openSocket(s.t, `/v1/realtime?${query}`, { headers, protocols })

describe('a Realtime API socket (review)', () => {
  it('a key blocked at $0 offered as a subprotocol beside a decoy Authorization is refused the socket: both keys go upstream', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const sockets = seen.length
    await expect(
      open('model=gpt-realtime', { authorization: 'Bearer sk-test-decoy-0001' }, ['realtime', 'openai-insecure-api-key.sk-blocked-hidden-0002']),
    ).rejects.toThrow(/429/)
    expect(seen.length).toBe(sockets)
    // Recorded under the key OpenAI bills (the bearer token), the offered one never in a row.
    const [row] = (await rowsAfterAtLeast(s.t, before, 1)).slice(-1)
    expect(row).toMatchObject({ endpoint: 'realtime', status: 429, cost_usd: 0, key_hint: expect.stringContaining('0001') })
    expect(JSON.stringify(ledgerRows(s.t.dbFile))).not.toContain('sk-blocked-hidden')
  })

  it('a key blocked at $0 offered as a second subprotocol key, after another one, is refused the socket: every offered key goes upstream', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const sockets = seen.length
    await expect(open('model=gpt-realtime', {}, ['realtime', 'openai-insecure-api-key.sk-test-first-0010', 'openai-insecure-api-key.sk-blocked-second-0011'])).rejects.toThrow(/429/)
    expect(seen.length).toBe(sockets)
    // Recorded under the first offered key (the one the socket's calls are recorded under).
    const [row] = await rowsAfterAtLeast(s.t, before, 1)
    expect(row).toMatchObject({ endpoint: 'realtime', status: 429, key_hint: expect.stringContaining('0010') })
  })

  it("the upgrade of a socket carrying two keys counts no request for either: under the second key's requests_per_minute 1 its first response.create goes through", async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await open('model=gpt-realtime&answer=1', { authorization: 'Bearer sk-test-twokeys-0008', 'x-api-key': 'sk-rpm-twokeys-0009' })
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_1' }))
    const [row] = await rowsAfterAtLeast(s.t, before, 1)
    c.ws.close()
    expect(row).toMatchObject({ endpoint: 'realtime', status: 200, input_tokens: 1000, key_hint: expect.stringContaining('0008') })
  })

  it("on an open socket, each response.create is checked for the offered key too: the decoy bearer token's socket is refused its second response under the offered key's per-minute limit", async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await open('model=gpt-realtime&answer=1', { authorization: 'Bearer sk-test-decoy-0006' }, ['realtime', 'openai-insecure-api-key.sk-rpm-offered-0007'])
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_1' }))
    await eventually(() => c.frames.some((f) => f.type === 'response.done'), 10_000)
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_2' }))
    await eventually(() => c.frames.some((f) => f.type === 'error'), 10_000)
    expect(c.frames.find((f) => f.type === 'error')).toMatchObject({ status: 429, error: { type: 'rate_limited', event_id: 'evt_2' } })
    const rows = await rowsAfterAtLeast(s.t, before, 2)
    c.ws.close()
    expect(rows.map((r) => [r.status, r.key_hint])).toEqual([
      [200, expect.stringContaining('0006')],
      [429, expect.stringContaining('0006')],
    ])
  })

  it('out-of-band responses interleaved with the conversation\'s, one cancelled, one failed: each recorded once at its own usage, cached split per modality', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await open('model=gpt-realtime', { authorization: 'Bearer sk-test-oob-0003' })
    const usage = (inText: number, inAudio: number, inImage: number, cText: number, cAudio: number, cImage: number, outText: number, outAudio: number) => ({
      total_tokens: inText + inAudio + inImage + outText + outAudio,
      input_tokens: inText + inAudio + inImage,
      output_tokens: outText + outAudio,
      input_token_details: { text_tokens: inText, audio_tokens: inAudio, image_tokens: inImage, cached_tokens: cText + cAudio + cImage, cached_tokens_details: { text_tokens: cText, audio_tokens: cAudio, image_tokens: cImage } },
      output_token_details: { text_tokens: outText, audio_tokens: outAudio },
    })
    const resp = (id: string, status: string, u: unknown, extra: Record<string, unknown> = {}) => ({ object: 'realtime.response', id, status, status_details: null, output: [], usage: u, ...extra })
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_a' }))
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_b', response: { conversation: 'none', output_modalities: ['text'] } }))
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_c', response: { conversation: 'none' } }))
    c.ws.send(
      JSON.stringify({
        type: 'test.play',
        events: [
          { type: 'response.created', event_id: 'e1', response: resp('resp_A', 'in_progress', null) },
          { type: 'response.created', event_id: 'e2', response: resp('resp_B', 'in_progress', null, { conversation_id: null }) },
          { type: 'response.created', event_id: 'e3', response: resp('resp_C', 'in_progress', null, { conversation_id: null }) },
          { type: 'response.done', event_id: 'e4', response: resp('resp_B', 'completed', usage(300, 0, 0, 0, 0, 0, 40, 0), { conversation_id: null }) },
          { type: 'response.done', event_id: 'e5', response: resp('resp_C', 'failed', usage(50, 0, 0, 0, 0, 0, 0, 0), { status_details: { type: 'failed', error: { type: 'server_error', code: 'server_error' } } }) },
          { type: 'response.done', event_id: 'e6', response: resp('resp_A', 'cancelled', usage(200, 800, 100, 100, 500, 50, 20, 80), { status_details: { type: 'cancelled', reason: 'client_cancelled' } }) },
        ],
      }),
    )
    const rows = await rowsAfterAtLeast(s.t, before, 3)
    c.ws.close()
    expect(rows).toHaveLength(3)
    const byId = Object.fromEntries(rows.map((r) => [r.response_id, r]))
    expect(byId.resp_B).toMatchObject({ status: 200, input_tokens: 300, output_tokens: 40, estimated: 0 })
    expect(byId.resp_B.cost_usd).toBeCloseTo((300 * 4 + 40 * 16) / 1e6, 15)
    expect(byId.resp_C).toMatchObject({ status: 200, error: 'server_error', input_tokens: 50 })
    expect(byId.resp_C.cost_usd).toBeCloseTo((50 * 4) / 1e6, 15)
    // gpt-realtime: text $4/M (cached $0.40), audio $32/M (cached $0.40), image $5/M (cached $0.50); output text $16/M, audio $64/M.
    expect(byId.resp_A).toMatchObject({ status: 200, input_tokens: 1_100, cache_read_tokens: 650, output_tokens: 100, estimated: 0 })
    expect(byId.resp_A.cost_usd).toBeCloseTo((100 * 4 + 100 * 0.4 + 300 * 32 + 500 * 0.4 + 50 * 5 + 50 * 0.5 + 20 * 16 + 80 * 64) / 1e6, 15)
  })

  it('a response.create whose type is written with a JSON escape (response\\u002ecreate) is gated as any: over the per-minute limit it is refused, not sent', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await open('model=gpt-realtime&answer=1', { authorization: 'Bearer sk-rpm-escape-0004' })
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_1' }))
    await eventually(() => c.frames.some((f) => f.type === 'response.done'), 10_000)
    const up1 = seen.at(-1)!
    // The same event, its type's dot escaped: OpenAI's JSON parser reads response.create.
    c.ws.send('{"type":"response\\u002ecreate","event_id":"evt_2"}')
    await eventually(() => c.frames.some((f) => f.type === 'error'), 10_000)
    expect(c.frames.find((f) => f.type === 'error')).toMatchObject({ status: 429, error: { type: 'rate_limited', event_id: 'evt_2' } })
    const rows = await rowsAfterAtLeast(s.t, before, 2)
    expect(rows.map((r) => r.status)).toEqual([200, 429])
    expect(up1.frames.map((f) => JSON.parse(String(f)).event_id)).toEqual(['evt_1'])
    c.ws.close()
  })

  it('big audio frames, binary frames and frames that only look billed pass both ways unchanged, and the socket goes on', async () => {
    const ws = new WebSocket(`${s.t.url.replace('http', 'ws')}/v1/realtime?model=gpt-realtime&echo=1`, { headers: { authorization: 'Bearer sk-test-echo-0005' } })
    const got: { data: Buffer; binary: boolean }[] = []
    ws.on('message', (d, binary) => got.push({ data: d as Buffer, binary }))
    await new Promise<void>((resolve, reject) => {
      ws.on('open', () => resolve())
      ws.on('error', reject)
    })
    const audio = Buffer.alloc(6 * 1024 * 1024, 7).toString('base64')
    const sent: { data: Buffer; binary: boolean }[] = [
      { data: Buffer.from(JSON.stringify({ type: 'input_audio_buffer.append', audio })), binary: false },
      { data: Buffer.from([0x7b, 0x5c, 0x75, 0x00, 0xff, 0x10]), binary: true },
      { data: Buffer.from('{"type":"response.done","response":{"id":"resp_bad", not json'), binary: false },
      { data: Buffer.from('{"type":"conversation.item.input_audio_transcription.completed","usage":'), binary: false },
      { data: Buffer.from('{"type":"error","event_id":null,"error":{"type":"invalid_request_error","code":"x","event_id":null}}'), binary: false },
      { data: Buffer.from(JSON.stringify({ type: 'input_audio_buffer.append', audio: 'AAAA' })), binary: false },
    ]
    for (const f of sent) ws.send(f.data, { binary: f.binary })
    await eventually(() => got.length === sent.length, 20_000)
    expect(got.map((g) => g.binary)).toEqual(sent.map((f) => f.binary))
    for (let i = 0; i < sent.length; i++) expect(got[i].data.equals(sent[i].data)).toBe(true)
    expect(ws.readyState).toBe(WebSocket.OPEN)
    ws.close()
    await eventually(() => s.t.server.proxy.active === 0, 10_000)
  })
})
