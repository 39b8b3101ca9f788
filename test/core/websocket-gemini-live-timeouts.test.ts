import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { LIVE_PATH, openSocket, rowsAfter, serverOverWsUpstream } from '../support/ws-sessions'

/**
 * The upstream's silence on a Gemini Live API socket (README: WebSockets), timed as on a Realtime
 * one: a turn begun and then silent past `upstream.idle_timeout_ms` is recorded 504
 * `upstream_stalled`, estimated, and the client closed with 1014.
 */

const AUDIO = readFileSync(join(__dirname, '../fixtures/gemini-live/native-audio-turns.jsonl'), 'utf8').trim().split('\n')

const s = serverOverWsUpstream(
  {
    onConnection: (ws) => {
      ws.on('message', (data) => {
        const f = JSON.parse(String(data))
        if (f.setup) ws.send(Buffer.from(AUDIO[0]), { binary: true })
        // The user's speech: the turn begins (its audio), then nothing.
        if (f.realtimeInput?.audio?.data === 'AAAA') ws.send(Buffer.from(AUDIO[2]), { binary: true })
        // A question that needs a tool: the model asks for it, then waits for the client's answer.
        if (f.clientContent) ws.send(Buffer.from(JSON.stringify({ toolCall: { functionCalls: [{ id: 'call-1', name: 'lookup', args: {} }] } })), { binary: true })
        if (f.toolResponse) for (const m of AUDIO.slice(4, 7)) ws.send(Buffer.from(m), { binary: true })
      })
    },
  },
  { upstream: { first_byte_timeout_ms: 1000, idle_timeout_ms: 1000 } },
)

describe('an upstream silent on a Gemini Live API socket', () => {
  it('within a turn, past idle_timeout_ms: 504 upstream_stalled, estimated; the client closed 1014', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const { ws, closed } = await openSocket(s.t, `${LIVE_PATH}?key=AIza-test-live-timeout-0001`)
    ws.send(JSON.stringify({ setup: { model: 'models/gemini-2.5-flash-native-audio-preview-09-2025' } }))
    ws.send(JSON.stringify({ realtimeInput: { audio: { mimeType: 'audio/pcm;rate=16000', data: 'AAAA' } } }))
    expect(await closed).toEqual({ code: 1014, reason: 'the provider stopped answering' })
    const [row] = await rowsAfter(s.t, before, 1)
    expect(row).toMatchObject({ provider: 'gemini', endpoint: 'live', model: 'gemini-2.5-flash-native-audio-preview-09-2025', status: 504, error: 'upstream_stalled', estimated: 1 })
  })

  it('within a turn, while the microphone keeps streaming: the client\'s audio does not keep a stalled turn alive', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const { ws, frames, closed } = await openSocket(s.t, `${LIVE_PATH}?key=AIza-test-live-timeout-0003`)
    let open = true
    void closed.then(() => (open = false))
    ws.send(JSON.stringify({ setup: { model: 'models/gemini-2.5-flash-native-audio-preview-09-2025' } }))
    ws.send(JSON.stringify({ realtimeInput: { audio: { mimeType: 'audio/pcm;rate=16000', data: 'AAAA' } } }))
    await eventually(() => frames.some((f) => f.serverContent), 10_000)
    // The microphone keeps streaming, a frame every tenth of the idle limit, which the upstream
    // takes without a word, for up to eight idle limits.
    let sent = 0
    while (open && sent < 80) {
      ws.send(JSON.stringify({ realtimeInput: { audio: { mimeType: 'audio/pcm;rate=16000', data: 'BBBB' } } }))
      sent++
      await new Promise((r) => setTimeout(r, 100))
    }
    expect(open).toBe(false)
    expect(await closed).toEqual({ code: 1014, reason: 'the provider stopped answering' })
    const [row] = await rowsAfter(s.t, before, 1)
    expect(row).toMatchObject({ provider: 'gemini', endpoint: 'live', status: 504, error: 'upstream_stalled', estimated: 1 })
  })

  it('a tool call the client takes longer than idle_timeout_ms to answer is the client\'s silence, not a stall', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const { ws, frames, closed } = await openSocket(s.t, `${LIVE_PATH}?key=AIza-test-live-timeout-0002`)
    let closedWith = 0
    void closed.then(({ code }) => (closedWith = code))
    ws.send(JSON.stringify({ setup: { model: 'models/gemini-2.5-flash-native-audio-preview-09-2025' } }))
    ws.send(JSON.stringify({ clientContent: { turns: [{ role: 'user', parts: [{ text: 'Look it up' }] }], turnComplete: true } }))
    await eventually(() => frames.some((f) => f.toolCall), 10_000)
    // The tool runs while a turn on another socket, begun after, stalls: its idle timer, as long
    // and started later, fires after any this socket's would have. The upstream waits meanwhile.
    const other = await openSocket(s.t, `${LIVE_PATH}?key=AIza-test-live-timeout-0004`)
    other.ws.send(JSON.stringify({ setup: { model: 'models/gemini-2.5-flash-native-audio-preview-09-2025' } }))
    other.ws.send(JSON.stringify({ realtimeInput: { audio: { mimeType: 'audio/pcm;rate=16000', data: 'AAAA' } } }))
    expect(await other.closed).toEqual({ code: 1014, reason: 'the provider stopped answering' })
    ws.send(JSON.stringify({ toolResponse: { functionResponses: [{ id: 'call-1', name: 'lookup', response: { output: 'sunny' } }] } }))
    const got = await rowsAfter(s.t, before, 2)
    expect(closedWith).toBe(0)
    ws.close()
    // The other socket's stalled turn first; this one's, answered after the tool, whole.
    expect(got[0]).toMatchObject({ endpoint: 'live', status: 504, error: 'upstream_stalled' })
    expect(got[1]).toMatchObject({ endpoint: 'live', status: 200, input_tokens: 373, output_tokens: 23, estimated: 0 })
  })
})
