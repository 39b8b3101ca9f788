import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually } from '../support/http'
import { LIVE_PATH, keyRowsAtLeast, openSocket, rowsOfKey, serverOverWsUpstream } from '../support/ws-sessions'

/**
 * A Gemini Live API turn under way when the client closes the socket (README: WebSockets): the
 * relay passes the close on and holds the turn's record until the upstream answers it. The
 * `turnComplete` with `usageMetadata` that arrives in that while is the turn's bill, recorded once,
 * 499 as the client left; without it, the turn is recorded cut, estimated, after
 * upstream.connect_timeout_ms if the upstream never answers.
 */

const AUDIO = readFileSync(join(__dirname, '../fixtures/gemini-live/native-audio-turns.jsonl'), 'utf8').trim().split('\n')
/** The turn's end: 373 tokens in (301 text, 72 audio), 23 audio out. */
const END = AUDIO[6]
const END_COST = (301 * 0.5 + 72 * 3 + 23 * 12) / 1e6

interface Held {
  send: (frame: string) => void
  raw: any
  closed: Promise<void>
}
let held: ((h: Held) => void) | null = null

const s = serverOverWsUpstream(
  {
    onConnection: (ws) => {
      const closed = new Promise<void>((r) => ws.on('close', () => r()))
      ws.on('message', (data) => {
        const f = JSON.parse(String(data))
        if (f.setup) ws.send(Buffer.from(AUDIO[0]), { binary: true })
        const speech = f.realtimeInput?.audio?.data
        if (speech !== 'AAAA' && speech !== 'STOP') return
        // The user's speech: the turn begins (its audio); the provider reads nothing meanwhile.
        ws.send(Buffer.from(AUDIO[2]), { binary: true })
        // ...or the user speaks over it at once: the turn is interrupted, its turnComplete to come.
        if (speech === 'STOP') ws.send(Buffer.from(AUDIO[8]), { binary: true })
        const raw = (ws as any)._socket
        raw.pause()
        held?.({ send: (frame) => ws.send(Buffer.from(frame), { binary: true }), raw, closed })
      })
    },
  },
  { upstream: { connect_timeout_ms: 1_000 } },
)

async function closedMidTurn(key: string, speech = 'AAAA'): Promise<Held> {
  const upstreamHeld = new Promise<Held>((r) => (held = r))
  const { ws, frames, closed } = await openSocket(s.t, `${LIVE_PATH}?key=${key}`)
  ws.send(JSON.stringify({ setup: { model: 'models/gemini-2.5-flash-native-audio-preview-09-2025' } }))
  ws.send(JSON.stringify({ realtimeInput: { audio: { mimeType: 'audio/pcm;rate=16000', data: speech } } }))
  const upstream = await upstreamHeld
  await eventually(() => frames.some((f) => f.serverContent?.modelTurn) && (speech !== 'STOP' || frames.some((f) => f.serverContent?.interrupted)), 10_000)
  ws.close(1000)
  expect((await closed).code).toBe(1000)
  // The relay's close frame has reached the upstream (unread): the client's close has been seen.
  await eventually(() => upstream.raw.readableLength > 0, 10_000)
  return upstream
}

describe('a Gemini Live API turn the client closed the socket on', () => {
  it('is recorded with the usage the upstream sends before it answers the close: once, 499, its cost in the budgets', async () => {
    const key = 'AIza-test-live-close-usage-0001'
    const upstream = await closedMidTurn(key)
    upstream.send(END)
    upstream.raw.resume()
    await upstream.closed
    const [row] = await keyRowsAtLeast(s.t, key, 1)
    expect(row).toMatchObject({ provider: 'gemini', endpoint: 'live', status: 499, error: 'client_aborted', estimated: 0, priced: 1, input_tokens: 373, output_tokens: 23 })
    expect(row.cost_usd).toBeCloseTo(END_COST, 15)
    expect(rowsOfKey(s.t, key)).toHaveLength(1)
    expect(s.t.server.ledger.spend.key(hashKey(key)).day).toBeCloseTo(END_COST, 15)
    expect(await s.t.server.proxy.drain(5_000)).toBe(true)
  })

  it('without its usage, is recorded cut, once, after upstream.connect_timeout_ms if the upstream never answers the close', async () => {
    const key = 'AIza-test-live-close-usage-0002'
    const upstream = await closedMidTurn(key)
    const [row] = await keyRowsAtLeast(s.t, key, 1)
    expect(row).toMatchObject({ provider: 'gemini', endpoint: 'live', status: 499, error: 'client_aborted', estimated: 1 })
    // Its end later still (past the hold) is not a second record.
    upstream.send(END)
    upstream.raw.resume()
    await upstream.closed
    expect(rowsOfKey(s.t, key)).toHaveLength(1)
    expect(await s.t.server.proxy.drain(5_000)).toBe(true)
  })
  it('interrupted before the close, is recorded with the turnComplete and usage that follow: once, 200 as the server ended it', async () => {
    const key = 'AIza-test-live-close-usage-0003'
    const upstream = await closedMidTurn(key, 'STOP')
    upstream.send(END)
    upstream.raw.resume()
    await upstream.closed
    const [row] = await keyRowsAtLeast(s.t, key, 1)
    expect(row).toMatchObject({ provider: 'gemini', endpoint: 'live', status: 200, estimated: 0, input_tokens: 373, output_tokens: 23 })
    expect(row.cost_usd).toBeCloseTo(END_COST, 15)
    expect(rowsOfKey(s.t, key)).toHaveLength(1)
    expect(await s.t.server.proxy.drain(5_000)).toBe(true)
  })
})
