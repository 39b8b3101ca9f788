import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { hashKey } from '../../src/main/proxy/attribution'
import type { PostgresStore } from '../../src/main/storage/postgres'
import { eventually } from '../support/http'
import { fixture } from '../support/fixtures'
import { holdRows, lockWaiter, usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'
import { LIVE_PATH, openSocket } from '../support/ws-sessions'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'

/**
 * The budgets' checks of the turns a server starts (README: WebSockets), in PostgreSQL mode, where
 * a check under a `block` rule waits on the database: a Gemini Live message after which a turn
 * starts waits for its check, the messages behind it wait in order, and the check leaves nothing
 * reserved; a Realtime response the server started is checked the same way and goes on, until the
 * key's limit is reached and the next one is cancelled (the one after that closes the socket). Each
 * turn is settled at its exact cost.
 */

const h = usePostgres({ upstream: false })
let store: PostgresStore
let up: WsUpstream | undefined
let t: TestServer
/** What the upstream got on each socket, oldest first. */
const seen: any[][] = []

const VIDEO = fixture('gemini-live/text-video-turn.jsonl').toString('utf8').trim().split('\n')
/** gemini-3.1-flash-live-preview, the fixture's turn: text $0.75/M in, video $1/M in, text $4.50/M out. */
const LIVE_TURN = ((32 + 40) * 0.75 + 1258 * 1 + 20 * 4.5) / 1e6
const usage = { total_tokens: 1200, input_tokens: 1000, output_tokens: 200, input_token_details: { text_tokens: 1000, audio_tokens: 0, cached_tokens: 0 }, output_token_details: { text_tokens: 0, audio_tokens: 200 } }
/** gpt-realtime: 1,000 text tokens in at $4/M, 200 audio tokens out at $64/M. */
const RT_RESPONSE = (1000 * 4 + 200 * 64) / 1e6

beforeAll(async () => {
  const url = h.database()
  store = h.store(url)
  up = await startWsUpstream({
    onConnection: (ws, req) => {
      const frames: any[] = []
      seen.push(frames)
      let n = 0
      const realtime = (req.url ?? '').startsWith('/v1/realtime')
      ws.on('message', (data) => {
        const f = JSON.parse(String(data))
        frames.push(f)
        if (f.setup) ws.send(Buffer.from(VIDEO[0]), { binary: true })
        if (f.clientContent?.turnComplete) for (const m of VIDEO.slice(1)) ws.send(Buffer.from(m), { binary: true })
        // Server VAD: the server answers the end of the user's speech by itself; the second answer runs until cancelled.
        if (realtime && f.type === 'input_audio_buffer.append' && f.audio === 'END') {
          const resp = { object: 'realtime.response', id: `resp_pgvad${++n}`, status: 'in_progress', output: [], usage: null }
          ws.send(JSON.stringify({ type: 'response.created', event_id: `event_c${n}`, response: resp }))
          if (n === 1) ws.send(JSON.stringify({ type: 'response.done', event_id: `event_d${n}`, response: { ...resp, status: 'completed', usage } }))
        }
        if (realtime && f.type === 'response.cancel') {
          const resp = { object: 'realtime.response', id: f.response_id, status: 'cancelled', output: [], usage: { ...usage, total_tokens: 1000, output_tokens: 0, output_token_details: { text_tokens: 0, audio_tokens: 0 } } }
          ws.send(JSON.stringify({ type: 'response.done', event_id: 'event_dc', response: resp }))
        }
      })
    },
  })
  t = await h.server({
    url,
    upstream: up.url,
    config: {
      budgets: {
        rules: [
          { api_key_pattern: 'AIza-pg-live-*', daily_limit_usd: 0.002, action: 'block' },
          { api_key_pattern: 'sk-pg-vad-*', daily_limit_usd: 0.01, action: 'block' },
        ],
      },
    },
  })
}, 120_000)
afterAll(async () => {
  await t?.stop()
  await up?.close()
})

const spend = (key: string) => store.all<{ spent_usd: number; reserved_usd: number }>('SELECT spent_usd, reserved_usd FROM budget_spend WHERE api_key_hash = @k', { k: hashKey(key) })
const calls = (key: string) => store.all<{ status: number; error: string | null; cost_usd: number }>('SELECT status, error, cost_usd FROM calls WHERE api_key_hash = @k ORDER BY id', { k: hashKey(key) })
/** The key's calls once there are `n`, with its spend rows all at `usd` and nothing reserved. */
const settled = (key: string, n: number, usd: number) =>
  eventually(async () => {
    const r = await calls(key)
    const s = await spend(key)
    return r.length === n && s.length > 0 && s.every((x) => Math.abs(x.spent_usd - usd) < 1e-12 && x.reserved_usd === 0) ? r : undefined
  }, 20_000) as Promise<{ status: number; error: string | null; cost_usd: number }[]>

const content = (text: string) => JSON.stringify({ clientContent: { turns: [{ role: 'user', parts: [{ text }] }], turnComplete: true } })
const audio = (data: string) => JSON.stringify({ realtimeInput: { audio: { mimeType: 'audio/pcm;rate=16000', data } } })

describe('the checks of server-started turns in PostgreSQL mode', () => {
  it('Gemini Live: a turn’s message waits for its check, the audio behind it waits in order, nothing stays reserved; past the limit the next is refused', async () => {
    const key = 'AIza-pg-live-aaaaaaaa-0001'
    const c = await openSocket(t, `${LIVE_PATH}?key=${key}`)
    c.ws.send(JSON.stringify({ setup: { model: 'models/gemini-3.1-flash-live-preview' } }))
    await eventually(() => c.frames.some((f) => f.setupComplete), 20_000)
    const upstream = seen.at(-1)!
    c.ws.send(content('What is on the desk?'))
    await settled(key, 1, LIVE_TURN)

    // The check waits on the key's spend rows; the audio sent behind its message waits too.
    const held = await holdRows(store, 'SELECT id FROM budget_spend WHERE api_key_hash = @k', { k: hashKey(key) })
    c.ws.send(content('And the chair?'))
    c.ws.send(audio('AAAA'))
    await lockWaiter(store, 20_000)
    expect(upstream).toHaveLength(2)
    await held.release()
    await eventually(() => upstream.length === 4, 20_000)
    expect(upstream.slice(2)).toEqual([JSON.parse(content('And the chair?')), JSON.parse(audio('AAAA'))])
    // Two turns, each at its exact cost, nothing left reserved by the checks: over the $0.002 limit now.
    await settled(key, 2, 2 * LIVE_TURN)

    c.ws.send(content('Anything else?'))
    expect((await c.closed).code).toBe(1011)
    const rows = await settled(key, 3, 2 * LIVE_TURN)
    expect(rows[2]).toEqual({ status: 429, error: 'budget_exceeded', cost_usd: 0 })
    expect(upstream).toHaveLength(4)
  })

  it('Realtime, server VAD: a response the server started is checked against the database and goes on; once the limit is reached the next is cancelled, and the one after closes the socket', async () => {
    const key = 'sk-pg-vad-bbbbbbbb-0002'
    const c = await openSocket(t, '/v1/realtime?model=gpt-realtime', { headers: { authorization: `Bearer ${key}` } })
    const upstream = seen.at(-1)!
    c.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: 'END' }))
    await settled(key, 1, RT_RESPONSE)
    expect(upstream.filter((f) => f.type === 'response.cancel')).toEqual([])

    c.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: 'END' }))
    // Cancelled: its prompt billed (1,000 text tokens, $0.004), the refusal at $0.
    const rows = await settled(key, 3, RT_RESPONSE + 0.004)
    expect(rows.map((r) => [r.status, r.error])).toEqual([
      [200, null],
      [429, 'budget_exceeded'],
      [200, null],
    ])
    expect(upstream.filter((f) => f.type === 'response.cancel').map((f) => f.response_id)).toEqual(['resp_pgvad2'])
    await eventually(() => c.frames.some((f) => f.type === 'error' && f.error.code === 'budget_exceeded'), 20_000)
    expect(c.ws.readyState).toBe(WebSocket.OPEN)

    // Still over the limit at the next one: cancelled, its prompt billed, and the socket closed 1011.
    c.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: 'END' }))
    expect((await c.closed).code).toBe(1011)
    const after = await settled(key, 5, RT_RESPONSE + 0.008)
    expect(after.slice(3).map((r) => [r.status, r.error])).toEqual([
      [429, 'budget_exceeded'],
      [200, null],
    ])
    expect(upstream.filter((f) => f.type === 'response.cancel').map((f) => f.response_id)).toEqual(['resp_pgvad2', 'resp_pgvad3'])
    await eventually(() => t.server.proxy.active === 0 || undefined, 20_000)
  })
})
