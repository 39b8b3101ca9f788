import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { openSocket, rowsAfter, serverOverWsUpstream } from '../support/ws-sessions'

/**
 * The upstream's silence on a Realtime API socket (README: WebSockets), timed as on a Responses
 * socket: a response begun and then silent past `upstream.idle_timeout_ms` is recorded 504
 * `upstream_stalled`, estimated (at least the conversation so far as its prompt), and the client
 * closed with 1014; a `response.create` with no answer within `first_byte_timeout_ms` is 504
 * `upstream_timeout` at $0.
 */

const GA = readFileSync(join(__dirname, '../fixtures/openai-realtime/ga-server-vad-turn.jsonl'), 'utf8').trim().split('\n')

const s = serverOverWsUpstream(
  {
    onConnection: (ws) => {
      ws.send(GA[0])
      ws.on('message', (data) => {
        const f = JSON.parse(String(data))
        // The user's speech: one whole server-VAD turn (its response, and a transcription).
        if (f.type === 'input_audio_buffer.append' && f.audio === 'AAAA') for (const e of GA.slice(2)) ws.send(e)
        // 'evt_stall': the response begins, then nothing; 'evt_silent': nothing at all.
        if (f.type === 'response.create' && f.event_id?.startsWith('evt_stall')) ws.send(JSON.stringify({ type: 'response.created', event_id: 'event_S1', response: { object: 'realtime.response', id: 'resp_stall', status: 'in_progress', output: [], usage: null } }))
      })
    },
  },
  { upstream: { first_byte_timeout_ms: 1000, idle_timeout_ms: 1000 } },
)

const open = (key: string) => openSocket(s.t, '/v1/realtime?model=gpt-realtime', { headers: { authorization: `Bearer ${key}` } })

describe('an upstream silent on a Realtime API socket', () => {
  it('within a response, past idle_timeout_ms: 504 upstream_stalled, estimated from the conversation so far; the client closed 1014', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await open('sk-test-rt-timeout-0001')
    c.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: 'AAAA' }))
    await rowsAfter(s.t, before, 2)
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_stall' }))
    expect(await c.closed).toEqual({ code: 1014, reason: 'the provider stopped answering' })
    const [stalled] = (await rowsAfter(s.t, before, 3)).slice(2)
    expect(stalled).toMatchObject({ endpoint: 'realtime', status: 504, error: 'upstream_stalled', estimated: 1, input_tokens: 253, cache_read_tokens: 64 })
  })

  it('within a response, while the microphone keeps streaming: the client\'s frames do not keep a stalled response alive', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await open('sk-test-rt-timeout-0003')
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_stall_mic' }))
    await eventually(() => c.frames.some((f) => f.type === 'response.created'), 10_000)
    // The user's microphone: an audio frame every tenth of the idle limit, which the upstream
    // takes without a word, for up to eight idle limits.
    let sent = 0
    let live = true
    void c.closed.then(() => (live = false))
    while (live && sent < 80) {
      c.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: 'BBBB' }))
      sent++
      await new Promise((r) => setTimeout(r, 100))
    }
    expect(live).toBe(false)
    expect(await c.closed).toEqual({ code: 1014, reason: 'the provider stopped answering' })
    const [row] = await rowsAfter(s.t, before, 1)
    expect(row).toMatchObject({ endpoint: 'realtime', status: 504, error: 'upstream_stalled', estimated: 1 })
  })

  it('a response.create unanswered past first_byte_timeout_ms: 504 upstream_timeout at $0', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await open('sk-test-rt-timeout-0002')
    c.ws.send(JSON.stringify({ type: 'response.create', event_id: 'evt_silent' }))
    expect(await c.closed).toEqual({ code: 1014, reason: 'the provider stopped answering' })
    const [row] = await rowsAfter(s.t, before, 1)
    expect(row).toMatchObject({ endpoint: 'realtime', status: 504, error: 'upstream_timeout', cost_usd: 0 })
  })
})
