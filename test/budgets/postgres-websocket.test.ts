import { randomBytes } from 'node:crypto'
import type { Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { hashKey } from '../../src/main/proxy/attribution'
import type { PostgresStore } from '../../src/main/storage/postgres'
import { eventually, openConnections } from '../support/http'
import { holdRows, lockWaiter, usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'

/**
 * Codex's WebSocket transport in PostgreSQL mode: each `response.create` under a `block` rule
 * waits for its reservation in the database before it goes upstream, and the client's frames
 * sent meanwhile wait behind it, so the upstream gets every frame in the order it was sent. A
 * socket closed during that wait has its call recorded (never sent), its reservation freed.
 */

// The upstream here is a WebSocket server of the file's own.
const h = usePostgres({ upstream: false })
let store: PostgresStore
let up: WsUpstream | undefined
const seen: string[][] = []
let t: TestServer

function answer(n: number): string[] {
  const usage = { input_tokens: 1000 + n, output_tokens: 50 + n, total_tokens: 1050 + 2 * n }
  const resp = { id: `resp_${n}`, object: 'response', model: 'gpt-4o-mini-2024-07-18', status: 'in_progress' }
  return [
    JSON.stringify({ type: 'response.created', sequence_number: 0, response: resp }),
    JSON.stringify({ type: 'response.completed', sequence_number: 1, response: { ...resp, status: 'completed', usage } }),
  ]
}

beforeAll(async () => {
  const url = h.database()
  store = h.store(url)
  up = await startWsUpstream({
    onConnection: (ws) => {
      const frames: string[] = []
      seen.push(frames)
      let n = 0
      ws.on('message', (data, binary) => {
        frames.push(binary ? `binary:${(data as Buffer).toString('hex')}` : String(data))
        if (!binary && JSON.parse(String(data)).type === 'response.create') for (const f of answer(++n)) ws.send(f)
      })
    },
  })
  const upstream = up.url
  t = await h.server({
    url,
    upstream,
    config: {
      budgets: {
        rules: [
          { api_key_pattern: 'sk-ws-*', daily_limit_usd: 5, action: 'block' },
          { api_key_pattern: 'sk-wsblocked-*', daily_limit_usd: 0, action: 'block' },
        ],
      },
    },
  })
}, 120_000)
afterAll(async () => {
  // Before the harness stops the server and the cluster (afterAll hooks run last-registered first).
  await t?.stop()
  await up?.close()
})

function open(key: string): Promise<{ ws: WebSocket; frames: string[] }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/responses`, { headers: { authorization: `Bearer ${key}`, 'user-agent': 'codex_exec/0.169.0' } })
    const frames: string[] = []
    ws.on('message', (d) => frames.push(String(d)))
    ws.on('open', () => resolve({ ws, frames }))
    ws.on('error', reject)
  })
}

const create = (input: string) => JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input, stream: true })

describe('WebSocket calls under a block rule in PostgreSQL mode', () => {
  it('frames sent while a call waits for its reservation reach the upstream in order; the spend row holds both calls', async () => {
    const key = 'sk-ws-ordered-aaaaaaaa-0001'
    const c = await open(key)
    // Sent back to back: the second create and the binary frame arrive while the first waits on PostgreSQL.
    c.ws.send(create('first'))
    c.ws.send(create('second'))
    c.ws.send(Buffer.from([1, 2, 3]))
    await eventually(() => c.frames.length === 4, 20_000)
    expect(c.frames).toEqual([...answer(1), ...answer(2)])
    expect(seen.at(-1)).toEqual([create('first'), create('second'), 'binary:010203'])
    c.ws.close()
    // Both calls settled into the shared daily row (real cost, nothing left reserved).
    const row = await eventually(async () => {
      const r = await store.get<{ spent_usd: number; reserved_usd: number }>(
        "SELECT spent_usd, reserved_usd FROM budget_spend WHERE api_key_hash = @k AND period = 'daily'",
        { k: hashKey(key) },
      )
      const calls = await store.get<{ n: number; cost: number }>('SELECT COUNT(*) AS n, SUM(cost_usd) AS cost FROM calls WHERE api_key_hash = @k', { k: hashKey(key) })
      return r && calls?.n === 2 && Math.abs(r.spent_usd - calls.cost) < 1e-12 && r.reserved_usd < 1e-12 ? r : null
    }, 20_000)
    expect(row!.spent_usd).toBeGreaterThan(0)
  })

  it('a refused create is an error frame; the frames after it still go up in order', async () => {
    const c = await open('sk-wsblocked-bbbbbbbb-0002')
    c.ws.send(create('too dear'))
    c.ws.send(Buffer.from([9]))
    await eventually(() => c.frames.length === 1, 20_000)
    expect(JSON.parse(c.frames[0])).toMatchObject({ type: 'error', status: 429, error: { code: 'budget_exceeded' } })
    await eventually(() => seen.at(-1)?.length === 1, 20_000)
    expect(seen.at(-1)).toEqual(['binary:09'])
    c.ws.close()
  })

  it('a socket closed while its create waits for the reservation: recorded 499 at $0, never sent, the reservation freed', async () => {
    const key = 'sk-ws-hangup-cccccccc-0003'
    // A first call creates the key's spend rows.
    const first = await open(key)
    first.ws.send(create('first'))
    await eventually(() => first.frames.length === 2, 20_000)
    first.ws.close()
    const spend = () => store.all<{ reserved_usd: number }>('SELECT reserved_usd FROM budget_spend WHERE api_key_hash = @k', { k: hashKey(key) })
    await eventually(async () => ((await spend()).length > 0 && (await spend()).every((r) => r.reserved_usd === 0)) || undefined, 20_000)

    const c = await open(key)
    const upstreamSocket = seen.at(-1)!
    // Another session holds the spend rows: the create's admission waits for them.
    const held = await holdRows(store, 'SELECT id FROM budget_spend WHERE api_key_hash = @k', { k: hashKey(key) })
    c.ws.send(create('second'))
    await lockWaiter(store, 20_000)
    // Codex gone (Ctrl-C) while the reservation is pending; the server sees the socket close first.
    const before = await openConnections(t.server.http)
    c.ws.terminate()
    await eventually(async () => (await openConnections(t.server.http)) < before || undefined, 20_000)
    await held.release()

    const rows = await eventually(async () => {
      const r = await store.all<{ status: number; error: string | null; cost_usd: number }>('SELECT status, error, cost_usd FROM calls WHERE api_key_hash = @k ORDER BY id', { k: hashKey(key) })
      return r.length === 2 ? r : undefined
    }, 20_000)
    expect(rows![1]).toEqual({ status: 499, error: 'client_aborted', cost_usd: 0 })
    expect(upstreamSocket).toEqual([])
    await eventually(async () => (await spend()).every((r) => r.reserved_usd === 0) || undefined, 20_000)
    expect(t.server.proxy.active).toBe(0)
  })

  it('a client that floods frames while its create waits is read no further than a few MB: the rest waits in its socket, then goes up in order', async () => {
    const key = 'sk-ws-flood-dddddddd-0004'
    const first = await open(key)
    first.ws.send(create('first'))
    await eventually(() => first.frames.length === 2, 20_000)
    first.ws.close()
    // The server's side of the next socket, to see how much of the client it has read.
    let server: Socket | undefined
    const seeUpgrade = (_req: unknown, socket: Socket) => (server = socket)
    t.server.http.prependListener('upgrade', seeUpgrade)
    const c = await open(key)
    t.server.http.off('upgrade', seeUpgrade)
    const upstreamSocket = seen.at(-1)!
    // A second client, whose admission does not wait, sends the same frames: once they have all
    // gone through the relay, the first client had as long to send its own.
    const control = await open('sk-ws-control-eeeeeeee-0005')
    const controlUpstream = seen.at(-1)!
    // (Random bytes: a frame that compresses would cross the connection as a few bytes.)
    const frame = randomBytes(1024 * 1024)
    const frames = 48
    const held = await holdRows(store, 'SELECT id FROM budget_spend WHERE api_key_hash = @k', { k: hashKey(key) })
    try {
      c.ws.send(create('second'))
      await lockWaiter(store, 20_000)
      control.ws.send(create('control'))
      // 48 MB in frames of 1 MB each way (frames of up to the body limit are allowed).
      for (let i = 0; i < frames; i++) {
        c.ws.send(frame)
        control.ws.send(frame)
      }
      await eventually(() => controlUpstream.length === 1 + frames, 30_000)
      // Before: the waiting client's frames were all taken in, held in memory for as long as its
      // admission waited, however much it sent.
      expect(server!.bytesRead).toBeLessThan(16 * 1024 * 1024)
    } finally {
      await held.release()
    }
    // Admitted: the create goes up, then every frame, in order.
    await eventually(() => upstreamSocket.length === 1 + frames, 30_000)
    expect(upstreamSocket[0]).toBe(create('second'))
    expect(upstreamSocket.slice(1).every((f) => f === `binary:${frame.toString('hex')}`)).toBe(true)
    c.ws.close()
    control.ws.close()
  }, 90_000)
})

