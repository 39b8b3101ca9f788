import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { hashKey } from '../../src/main/proxy/attribution'
import type { PostgresStore } from '../../src/main/storage/postgres'
import { eventually, openConnections } from '../support/http'
import { holdRows, lockWaiter, usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'
import { openSocket } from '../support/ws-sessions'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'

/**
 * The Realtime API's socket in PostgreSQL mode (README: WebSockets): a `response.create` under a
 * `block` rule waits for its reservation in the database before it goes upstream, and the audio
 * the client streams meanwhile waits behind it, in order; the response is settled at its real
 * cost. A socket closed during that wait has its call recorded (never sent), its reservation freed.
 */

const h = usePostgres({ upstream: false })
let store: PostgresStore
let up: WsUpstream | undefined
const seen: string[][] = []
let t: TestServer

/** A response's two billed events: gpt-realtime, 1,000 text tokens in, 200 audio tokens out. */
function answer(n: number): string[] {
  const usage = { total_tokens: 1200, input_tokens: 1000, output_tokens: 200, input_token_details: { text_tokens: 1000, audio_tokens: 0, cached_tokens: 0 }, output_token_details: { text_tokens: 0, audio_tokens: 200 } }
  const resp = { object: 'realtime.response', id: `resp_pg${n}`, status: 'in_progress', output: [], usage: null }
  return [JSON.stringify({ type: 'response.created', event_id: `event_c${n}`, response: resp }), JSON.stringify({ type: 'response.done', event_id: `event_d${n}`, response: { ...resp, status: 'completed', usage } })]
}

beforeAll(async () => {
  const url = h.database()
  store = h.store(url)
  up = await startWsUpstream({
    onConnection: (ws) => {
      const frames: string[] = []
      seen.push(frames)
      let n = 0
      ws.on('message', (data) => {
        frames.push(String(data))
        if (JSON.parse(String(data)).type === 'response.create') for (const f of answer(++n)) ws.send(f)
      })
    },
  })
  t = await h.server({ url, upstream: up.url, config: { budgets: { rules: [{ api_key_pattern: 'sk-rt-*', daily_limit_usd: 5, action: 'block' }] } } })
}, 120_000)
afterAll(async () => {
  await t?.stop()
  await up?.close()
})

const open = (key: string) => openSocket(t, '/v1/realtime?model=gpt-realtime', { headers: { authorization: `Bearer ${key}` } })

const create = JSON.stringify({ type: 'response.create', event_id: 'evt_1' })
const append = (a: string) => JSON.stringify({ type: 'input_audio_buffer.append', audio: a })
const spend = (key: string) => store.all<{ spent_usd: number; reserved_usd: number }>('SELECT spent_usd, reserved_usd FROM budget_spend WHERE api_key_hash = @k', { k: hashKey(key) })
const calls = (key: string) => store.all<{ status: number; error: string | null; cost_usd: number }>('SELECT status, error, cost_usd FROM calls WHERE api_key_hash = @k ORDER BY id', { k: hashKey(key) })

describe('Realtime API calls under a block rule in PostgreSQL mode', () => {
  it('audio sent while a response.create waits for its reservation reaches the upstream in order; the response is settled at its cost', async () => {
    const key = 'sk-rt-ordered-aaaaaaaa-0001'
    const c = await open(key)
    c.ws.send(create)
    c.ws.send(append('AAAA'))
    c.ws.send(append('BBBB'))
    await eventually(() => c.frames.length === 2, 20_000)
    await eventually(() => seen.at(-1)!.length === 3, 20_000)
    expect(seen.at(-1)).toEqual([create, append('AAAA'), append('BBBB')])
    c.ws.close()
    // gpt-realtime: 1,000 text tokens at $4/M, 200 audio tokens out at $64/M.
    const want = (1000 * 4 + 200 * 64) / 1e6
    const rows = await eventually(async () => {
      const r = await calls(key)
      const s = await spend(key)
      return r.length === 1 && s.length > 0 && s.every((x) => Math.abs(x.spent_usd - want) < 1e-12 && x.reserved_usd === 0) ? r : undefined
    }, 20_000)
    expect(rows![0].status).toBe(200)
    expect(rows![0].cost_usd).toBeCloseTo(want, 15)
  })

  it('a socket closed while its response.create waits for the reservation: recorded 499 at $0, never sent, the reservation freed', async () => {
    const key = 'sk-rt-hangup-cccccccc-0003'
    const first = await open(key)
    first.ws.send(create)
    await eventually(() => first.frames.length === 2, 20_000)
    first.ws.close()
    await eventually(async () => ((await spend(key)).length > 0 && (await spend(key)).every((r) => r.reserved_usd === 0)) || undefined, 20_000)

    const c = await open(key)
    const upstreamSocket = seen.at(-1)!
    const held = await holdRows(store, 'SELECT id FROM budget_spend WHERE api_key_hash = @k', { k: hashKey(key) })
    c.ws.send(create)
    await lockWaiter(store, 20_000)
    const before = await openConnections(t.server.http)
    c.ws.terminate()
    await eventually(async () => (await openConnections(t.server.http)) < before || undefined, 20_000)
    await held.release()

    const rows = await eventually(async () => {
      const r = await calls(key)
      return r.length === 2 ? r : undefined
    }, 20_000)
    expect(rows![1]).toEqual({ status: 499, error: 'client_aborted', cost_usd: 0 })
    expect(upstreamSocket).toEqual([])
    await eventually(async () => (await spend(key)).every((r) => r.reserved_usd === 0) || undefined, 20_000)
    expect(t.server.proxy.active).toBe(0)
  })

  it("a socket's upgrade check holds no reservation once the socket is open, and a key no rule names is never kept waiting on the database", async () => {
    const key = 'sk-rt-upgrade-dddddddd-0004'
    const first = await open(key)
    first.ws.send(create)
    await eventually(() => first.frames.length === 2, 20_000)
    first.ws.close()
    await eventually(async () => ((await spend(key)).length > 0 && (await spend(key)).every((r) => r.reserved_usd === 0)) || undefined, 20_000)
    // The key's spend rows locked by another transaction for as long as this test wants.
    const held = await holdRows(store, 'SELECT id FROM budget_spend WHERE api_key_hash = @k', { k: hashKey(key) })
    try {
      const free = await open('sk-free-upgrade-eeeeeeee-0005')
      expect(free.ws.readyState).toBe(WebSocket.OPEN)
      free.ws.close()
    } finally {
      await held.release()
    }
    const again = await open(key)
    again.ws.close()
    await eventually(async () => (await spend(key)).every((r) => r.reserved_usd === 0) || undefined, 20_000)
    await eventually(() => t.server.proxy.active === 0 || undefined, 20_000)
  })
})
