import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { eventually, request } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { completed, created, resp, usage } from '../support/responses-events'
import { type TestServer, startTestServer } from '../support/server'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'

/**
 * The client's WebSocket messages are held in memory like request bodies, each up to the body
 * limit while it arrives and until it is sent upstream: they take their share of
 * server.max_buffered_body_mb with the HTTP calls' bodies (README: Memory for request bodies).
 * Without it, sockets sending large (or fragmented, or compressed) messages held far past the
 * total the HTTP calls are kept to. Held bytes are seen through the server's own total: an HTTP
 * call that does not fit beside them gets its 503.
 */

let up: WsUpstream
let t: TestServer
/** The size of each message the upstream received, in order. */
const received: number[] = []

beforeAll(async () => {
  up = await startWsUpstream({
    onConnection: (ws) =>
      ws.on('message', (d) => {
        received.push((d as Buffer).length)
        // A response.create whose input says "answer" is answered; any other is left open.
        const f = (d as Buffer).length < 10_000 ? JSON.parse(String(d)) : {}
        if (f.type !== 'response.create' || f.input !== 'answer') return
        const r = resp(`resp_${received.length}`, f.model)
        ws.send(JSON.stringify(created(r)))
        ws.send(JSON.stringify(completed(r, usage(10, 5))))
      }),
  })
  t = await startTestServer({ server: { max_buffered_body_mb: 1 } }, up.url)
})
afterAll(async () => {
  await t.cleanup()
  await up.close()
})

const SIZE = 700_000
/** A JSON frame of `bytes` bytes the relay passes on (no response.create: no call). */
const frame = (bytes: number) => {
  const head = '{"type":"session.update","pad":"'
  return head + ' '.repeat(bytes - head.length - 2) + '"}'
}
const CHAT = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
const chat = (body = CHAT) =>
  request(`${t.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-wsmem-0000001' }, body })
const big = CHAT + ' '.repeat(SIZE - CHAT.length)

function open(perMessageDeflate = false): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/responses`, { headers: { authorization: 'Bearer sk-wsmem-0000001' }, perMessageDeflate })
    ws.on('open', () => resolve(ws))
    ws.on('error', reject)
  })
}
const sent = (ws: WebSocket, data: string, fin: boolean) => new Promise<void>((resolve, reject) => ws.send(data, { fin }, (err) => (err ? reject(err) : resolve())))
const closed = (ws: WebSocket) => new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })))

/** An HTTP call that does not fit beside what is held is answered 503 (eventually: the frame is on its way). */
const refusedHttp = () => eventually(async () => (await chat(big)).status === 503, 10_000)
/** Room came back: the same call is no longer refused (the upstream answers it, here with a 404). */
const roomBack = () => eventually(async () => (await chat(big)).status !== 503, 10_000)

describe('WebSocket messages held in memory', () => {
  it('a message arriving in fragments takes its share of server.max_buffered_body_mb until it is sent upstream', async () => {
    const ws = await open()
    const text = frame(SIZE)
    const before = received.length
    // The first 600 KB of a message, as a fragment: held by the server until the rest comes.
    await sent(ws, text.slice(0, 600_000), false)
    await refusedHttp()
    // Small calls still fit beside it.
    expect((await chat()).status).not.toBe(503)
    await sent(ws, text.slice(600_000), true)
    await eventually(() => received.length === before + 1)
    expect(received[before]).toBe(SIZE)
    await roomBack()
    ws.close()
  })

  it('a compressed message is not taken in compressed: the client is offered no compression, so it counts at its full size', async () => {
    const ws = await open(true)
    // A compressed frame of spaces is a few hundred bytes on the wire for 600 KB held (a zip bomb).
    expect(ws.extensions).toBe('')
    const text = frame(SIZE)
    const before = received.length
    await sent(ws, text.slice(0, 600_000), false)
    await refusedHttp()
    await sent(ws, text.slice(600_000), true)
    await eventually(() => received.length === before + 1)
    expect(received[before]).toBe(SIZE)
    await roomBack()
    ws.close()
  })

  it('a socket whose message finds no room is closed 1013 with the reason; the others, and HTTP calls, go on', async () => {
    const a = await open()
    const text = frame(SIZE)
    const before = received.length
    await sent(a, text.slice(0, 600_000), false)
    await refusedHttp()
    const b = await open()
    const bClosed = closed(b)
    b.send(frame(SIZE))
    const { code, reason } = await bClosed
    expect(code).toBe(1013)
    expect(reason).toMatch(/server\.max_buffered_body_mb/)
    // B's message never went upstream; A's goes on and arrives whole.
    expect(a.readyState).toBe(WebSocket.OPEN)
    expect((await chat()).status).not.toBe(503)
    await sent(a, text.slice(600_000), true)
    await eventually(() => received.length === before + 1)
    expect(received.slice(before)).toEqual([SIZE])
    // Nothing B took is kept: its share came back with A's.
    await roomBack()
    const c = await open()
    await sent(c, frame(SIZE), true)
    await eventually(() => received.length === before + 2)
    expect(received[before + 1]).toBe(SIZE)
    a.close()
    c.close()
  })

  it('a socket closed for want of room keeps what it recorded, and its open call is recorded as at any close', async () => {
    const b = await open()
    // (The socket's calls only: the HTTP calls above may still be being recorded.)
    const socketRows = () => ledgerRows(t.dbFile, "endpoint = 'responses'")
    const rows = socketRows().length
    b.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: 'answer' }))
    await eventually(() => socketRows().length === rows + 1)
    b.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: 'hang' }))
    const before = received.length
    await eventually(() => received.length === before + 1)
    const a = await open()
    const text = frame(SIZE)
    await sent(a, text.slice(0, 600_000), false)
    await refusedHttp()
    const bClosed = closed(b)
    b.send(frame(SIZE))
    expect((await bClosed).code).toBe(1013)
    const r = (await eventually(() => {
      const all = socketRows().slice(rows)
      return all.length === 2 ? all : undefined
    })) as any[]
    expect(r[0]).toMatchObject({ status: 200, model: 'gpt-4o-mini', input_tokens: 10, output_tokens: 5 })
    expect(r[1]).toMatchObject({ status: 499, error: 'client_aborted', model: 'gpt-4o-mini' })
    await sent(a, text.slice(600_000), true)
    await eventually(() => received.length === before + 2)
    await roomBack()
    a.close()
  })
})
