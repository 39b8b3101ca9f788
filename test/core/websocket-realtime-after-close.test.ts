import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { openSocket, rowsAfter, serverOverWsUpstream } from '../support/ws-sessions'

/**
 * What a Realtime API upstream sends after the client has closed (README: WebSockets): the relay
 * passes the client's close on and reads the upstream until the upstream's own close answers it,
 * so an input transcription that arrives in that while (OpenAI bills it) is recorded; nothing is
 * sent on to the closed client.
 */

const GA = readFileSync(join(__dirname, '../fixtures/openai-realtime/ga-server-vad-turn.jsonl'), 'utf8').trim().split('\n')
const TRANSCRIBED = GA.find((l) => l.includes('"conversation.item.input_audio_transcription.completed"'))!

/** The upstream's side of the socket, held: it reads nothing more until told to. */
let held: ((send: (frame: string) => void, raw: any) => void) | null = null

const s = serverOverWsUpstream({
  onConnection: (ws) => {
    // The session, then its update naming the transcription model (gpt-4o-transcribe).
    ws.send(GA[0])
    ws.send(GA[1])
    ws.on('message', (data) => {
      const f = JSON.parse(String(data))
      // The user's speech committed: the provider transcribes it, and reads nothing meanwhile
      // (the relay's close frame waits unread behind it).
      if (f.type === 'input_audio_buffer.commit') {
        const raw = (ws as any)._socket
        raw.pause()
        held?.((frame) => ws.send(frame), raw)
      }
    })
  },
})

describe('a Realtime API socket the client has closed', () => {
  it('records an input transcription the upstream sends before it answers the close', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const upstreamHeld = new Promise<{ send: (frame: string) => void; raw: any }>((r) => (held = (send, raw) => r({ send, raw })))
    const { ws, frames, closed } = await openSocket(s.t, '/v1/realtime?model=gpt-realtime', { headers: { authorization: 'Bearer sk-test-rt-after-close-0001' } })
    await eventually(() => frames.some((f) => f.type === 'session.updated'), 10_000)
    ws.send(JSON.stringify({ type: 'input_audio_buffer.commit' }))
    const upstream = await upstreamHeld
    ws.close(1000)
    expect((await closed).code).toBe(1000)
    // The relay's close frame has reached the upstream (unread): the client's close is recorded.
    await eventually(() => upstream.raw.readableLength > 0, 10_000)
    upstream.send(TRANSCRIBED)
    upstream.raw.resume()
    const [row] = await rowsAfter(s.t, before, 1)
    expect(row).toMatchObject({ endpoint: 'realtime.transcription', model: 'gpt-4o-transcribe', status: 200, input_tokens: 17, output_tokens: 9, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBeCloseTo((17 * 6 + 9 * 10) / 1e6, 15)
    expect(frames.some((f) => f.type === 'conversation.item.input_audio_transcription.completed')).toBe(false)
  })
})
