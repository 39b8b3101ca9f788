import { randomBytes } from 'node:crypto'
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import type { Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import type { Logger } from '../../src/main/log'
import { eventually } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { ledgerRows } from '../support/ledger-rows'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'

/**
 * A provider that goes silent on Codex's Responses WebSocket is timed as over HTTP: no frame
 * within `upstream.first_byte_timeout_ms` of a `response.create`, or none for
 * `upstream.idle_timeout_ms` inside a response, and the calls are recorded 504 and the client's
 * socket closed with 1014, so the agent retries instead of waiting on a dead turn. A socket quiet
 * between turns, and a response whose frames keep coming, are left alone.
 */

const FIRST_BYTE_MS = 1500
const IDLE_MS = 1000
const CONNECT_MS = 1000
const BIG_DELTAS = 256

let up: WsUpstream
let t: TestServer
const warnings: string[] = []
let frozen = 0

function frames(n: number): string[] {
  const resp = { id: `resp_t${n}`, object: 'response', model: 'gpt-4o-mini-2024-07-18', status: 'in_progress' }
  const usage = { input_tokens: 1000, input_tokens_details: { cached_tokens: 0 }, output_tokens: 40, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 1040 }
  return [
    JSON.stringify({ type: 'response.created', sequence_number: 0, response: resp }),
    JSON.stringify({ type: 'response.output_text.delta', sequence_number: 1, item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'hello there' }),
    JSON.stringify({ type: 'response.output_text.delta', sequence_number: 2, item_id: 'msg_1', output_index: 0, content_index: 0, delta: ', friend' }),
    JSON.stringify({ type: 'response.completed', sequence_number: 3, response: { ...resp, status: 'completed', usage } }),
  ]
}

beforeAll(async () => {
  up = await startWsUpstream({
    onConnection: (ws) => {
      let n = 0
      ws.on('message', async (data) => {
        const text = String(data)
        const f = frames(++n)
        // 'silent': nothing at all; 'stall': the response begins, then nothing.
        if (text.includes('silent')) return
        // 'freeze': the provider's connection goes dead (reads nothing, answers nothing).
        if (text.includes('freeze')) {
          ;(ws as any)._socket.pause()
          return void frozen++
        }
        if (text.includes('stall')) return void ws.send(f[0])
        // 'erred': the response begins, then an error frame ends the turn (no terminal event follows).
        if (text.includes('erred')) {
          ws.send(f[0])
          return void ws.send(JSON.stringify({ type: 'error', status: 400, sequence_number: 1, error: { type: 'invalid_request_error', code: 'context_length_exceeded', message: 'too long' } }))
        }
        // 'big': 16 MB of text deltas at once (random, so compression does not shrink them), more
        // than the sockets' buffers and the relay's hold for a slow client.
        if (text.includes('big')) {
          const delta = JSON.stringify({ type: 'response.output_text.delta', sequence_number: 1, item_id: 'msg_1', output_index: 0, content_index: 0, delta: randomBytes(48 * 1024).toString('base64') })
          ws.send(f[0])
          for (let i = 0; i < BIG_DELTAS; i++) ws.send(delta)
          return void ws.send(f[3])
        }
        // 'slow': every frame a good while apart, each gap well inside the idle limit, the whole far past it.
        for (const frame of f) {
          if (text.includes('slow')) await new Promise((r) => setTimeout(r, IDLE_MS / 3))
          if (ws.readyState === ws.OPEN) ws.send(frame)
        }
      })
    },
  })
  const log: Logger = { info: () => {}, warn: (l) => void warnings.push(l), error: () => {}, debug: () => {} }
  t = await startTestServer({ upstream: { connect_timeout_ms: CONNECT_MS, first_byte_timeout_ms: FIRST_BYTE_MS, idle_timeout_ms: IDLE_MS } }, up.url, undefined, { log })
})
afterAll(async () => {
  await t.cleanup()
  await up.close()
})

function rows(): any[] {
  return ledgerRows(t.dbFile)
}

interface Client {
  ws: WebSocket
  frames: string[]
  closed: Promise<{ code: number; reason: string }>
}

function open(): Promise<Client> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/responses`, { headers: { authorization: 'Bearer sk-test-websocket-silence-01', 'user-agent': 'codex_exec/0.171.0' } })
    const frames: string[] = []
    const closed = new Promise<{ code: number; reason: string }>((r) => ws.once('close', (code, reason) => r({ code, reason: String(reason) })))
    ws.on('message', (d) => frames.push(String(d)))
    ws.on('open', () => resolve({ ws, frames, closed }))
    ws.on('error', reject)
  })
}

const create = (input: string) => JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: [{ role: 'user', content: [{ type: 'input_text', text: input }] }], stream: true })

describe('an upstream silent on a Responses WebSocket', () => {
  it('within a response, for longer than idle_timeout_ms: the call is recorded 504 upstream_stalled (estimated), the client closed with 1014', async () => {
    const before = rows().length
    const c = await open()
    c.ws.send(create('stall please'))
    expect(await c.closed).toEqual({ code: 1014, reason: 'the provider stopped answering' })
    expect(c.frames).toHaveLength(1)
    const r = await eventually(() => rows()[before], 10_000)
    expect(r).toMatchObject({ status: 504, error: 'upstream_stalled', estimated: 1, agent: 'codex' })
    expect(r.cost_usd).toBeGreaterThan(0)
    expect(warnings.some((w) => w.includes('stalled mid-response on a WebSocket for longer than upstream.idle_timeout_ms'))).toBe(true)
  })

  it('within a response, while the client keeps sending frames of its own: they do not keep the stalled response alive', async () => {
    const before = rows().length
    const c = await open()
    let live = true
    void c.closed.then(() => (live = false))
    c.ws.send(create('stall please'))
    // A frame every tenth of the idle limit, which the upstream takes without a word, for up to
    // eight idle limits.
    let sent = 0
    while (live && sent < 80) {
      c.ws.send(JSON.stringify({ type: 'x-client-note', note: 'silent' }))
      sent++
      await new Promise((r) => setTimeout(r, IDLE_MS / 10))
    }
    expect(live).toBe(false)
    expect(await c.closed).toEqual({ code: 1014, reason: 'the provider stopped answering' })
    const r = await eventually(() => rows()[before], 10_000)
    expect(r).toMatchObject({ status: 504, error: 'upstream_stalled', estimated: 1 })
  })

  it('after a turn that ended with an error frame (no terminal event), the socket is between turns: not closed as stalled', async () => {
    const before = rows().length
    const erred = await open()
    let closedEarly = false
    void erred.closed.then(() => (closedEarly = true))
    erred.ws.send(create('erred please'))
    await eventually(() => erred.frames.length === 2, 10_000)
    // A socket that stalls, opened after: its idle timer, as long, fires after the erred one's would have.
    const stalled = await open()
    stalled.ws.send(create('stall please'))
    expect(await stalled.closed).toEqual({ code: 1014, reason: 'the provider stopped answering' })
    // The next turn on the erred socket is answered: no close frame came before it.
    erred.ws.send(create('next turn'))
    await eventually(() => erred.frames.length === 2 + 4, 10_000)
    expect(closedEarly).toBe(false)
    const got = (await eventually(() => {
      const r = rows().slice(before)
      return r.length === 3 ? r : undefined
    }, 10_000)) as any[]
    expect(got.map((r) => [r.status, r.error]).sort()).toEqual([
      [200, null],
      [200, 'context_length_exceeded'],
      [504, 'upstream_stalled'],
    ])
    erred.ws.close()
  })

  it('between turns, a ping the provider does not answer within connect_timeout_ms: the client is closed 1014, its own ping still answered', async () => {
    const c = await open()
    // Not a response.create: no turn is open, nothing else times the provider.
    c.ws.send(JSON.stringify({ type: 'freeze' }))
    await eventually(() => frozen === 1, 10_000)
    const pong = new Promise((r) => c.ws.once('pong', r))
    c.ws.ping()
    await pong
    expect(await c.closed).toEqual({ code: 1014, reason: 'the provider connection was lost' })
    expect(warnings.some((w) => w.includes('did not answer a ping on a WebSocket'))).toBe(true)
  })

  it('after a response.create, for longer than first_byte_timeout_ms: recorded 504 upstream_timeout at $0', async () => {
    const before = rows().length
    const c = await open()
    c.ws.send(create('silent please'))
    expect(await c.closed).toEqual({ code: 1014, reason: 'the provider stopped answering' })
    const r = await eventually(() => rows()[before], 10_000)
    expect(r).toMatchObject({ status: 504, error: 'upstream_timeout', cost_usd: 0, input_tokens: 0 })
  })

  it('while the client reads slowly (the relay holds the upstream back), its silence is not the upstream\'s: nothing is cut', async () => {
    const before = rows().length
    // The relay's socket to the upstream: one this process opens to the upstream's port.
    const opened: Socket[] = []
    const watch = (m: unknown) => void opened.push((m as { socket: Socket }).socket)
    subscribe('net.client.socket', watch)
    const c = await open().finally(() => unsubscribe('net.client.socket', watch))
    const toUpstream = opened.filter((s) => s.remotePort === Number(new URL(up.url).port))
    expect(toUpstream).toHaveLength(1)
    c.ws.pause()
    c.ws.send(create('big please'))
    // The relay has paused the upstream for the client: it reads nothing more from it. Held back
    // while a response on another socket, begun after, stalls: its idle timer, as long and started
    // later, fires after any of this socket's.
    await eventually(() => toUpstream[0].isPaused(), 10_000)
    const other = await open()
    other.ws.send(create('stall please'))
    expect(await other.closed).toEqual({ code: 1014, reason: 'the provider stopped answering' })
    c.ws.resume()
    await eventually(() => rows().length === before + 2, 10_000)
    expect(rows().slice(before).map((r) => [r.status, r.error])).toEqual([
      [504, 'upstream_stalled'],
      [200, null],
    ])
    expect(rows()[before + 1]).toMatchObject({ status: 200, error: null, output_tokens: 40 })
    await eventually(() => c.frames.length === BIG_DELTAS + 2, 10_000)
    expect(JSON.parse(c.frames[BIG_DELTAS + 1]).type).toBe('response.completed')
    expect(c.ws.readyState).toBe(WebSocket.OPEN)
    c.ws.close()
  })

  it('between turns, and while frames keep coming, nothing is cut', async () => {
    const before = rows().length
    const c = await open()
    c.ws.send(create('slow please'))
    await eventually(() => rows().length === before + 1, 10_000)
    // Quiet between turns (after a ping, answered both here and upstream) for longer than every
    // limit: a response asked for on another socket after it gets no first frame, and its timer,
    // the longest limit and started later, fires after any of this socket's. This one stays open.
    const pong = new Promise((r) => c.ws.once('pong', r))
    c.ws.ping()
    await pong
    let closedEarly = false
    void c.closed.then(() => (closedEarly = true))
    const other = await open()
    other.ws.send(create('silent please'))
    expect(await other.closed).toEqual({ code: 1014, reason: 'the provider stopped answering' })
    c.ws.send(create('slow again'))
    await eventually(() => rows().length === before + 3 || closedEarly, 10_000)
    expect(rows().slice(before).map((r) => [r.status, r.error, r.output_tokens])).toEqual([
      [200, null, 40],
      [504, 'upstream_timeout', 0],
      [200, null, 40],
    ])
    expect(closedEarly).toBe(false)
    expect(c.ws.readyState).toBe(WebSocket.OPEN)
    c.ws.close()
  })
})
