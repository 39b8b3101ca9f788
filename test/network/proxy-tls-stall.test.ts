import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { eventually, postJson } from '../support/http'
import { SECURE_HOST, startLoggedServer } from './support'

/**
 * A corporate proxy that answers CONNECT and then passes nothing on (the TLS handshake with the
 * upstream inside the tunnel never completes: a filtering proxy that holds it, an upstream that
 * stalls). Opening the connection, the TLS inside the tunnel included, is what
 * upstream.connect_timeout_ms bounds: undici times that handshake for an HTTP call, and a
 * WebSocket upgrade (Codex's Responses socket) is answered 504 as soon, not after the whole
 * upgrade's time limit (connect + first byte, over ten minutes by default).
 */

let proxy: http.Server
let proxyUrl: string
const tunnels = new Set<Socket>()

beforeAll(async () => {
  proxy = http.createServer()
  proxy.on('connect', (_req: http.IncomingMessage, socket: Socket) => {
    tunnels.add(socket)
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
    // The client's TLS hello is read, never answered; closed when Burnrate closes its side.
    socket.resume()
    socket.on('end', () => socket.destroy())
    socket.on('close', () => tunnels.delete(socket))
    socket.on('error', () => {})
  })
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
})
afterAll(async () => {
  for (const s of tunnels) s.destroy()
  await new Promise<void>((r) => proxy.close(() => r()))
})

function upgrade(url: string): Promise<{ status?: number; body?: any; gaveUp?: boolean }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/v1/responses`, { headers: { authorization: 'Bearer sk-test' } })
    const giveUp = setTimeout(() => {
      ws.terminate()
      resolve({ gaveUp: true })
    }, 20_000)
    ws.on('unexpected-response', (_req, res) => {
      let text = ''
      res.on('data', (c) => (text += c))
      res.on('end', () => {
        clearTimeout(giveUp)
        resolve({ status: res.statusCode, body: JSON.parse(text) })
      })
    })
    ws.on('error', () => {})
  })
}

describe('a proxy that opens the tunnel and then passes nothing on', () => {
  it('is a 504 after connect_timeout_ms for a call and a WebSocket upgrade alike, and the tunnels are closed', async () => {
    const s = await startLoggedServer({
      upstream: { proxy: proxyUrl, connect_timeout_ms: 300, first_byte_timeout_ms: 60_000 },
      providers: { openai: { base_url: `https://${SECURE_HOST}/v1` } },
    })
    try {
      const res = await postJson(`${s.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
      expect(res.status, res.text).toBe(504)
      expect(res.json().error.type).toBe('upstream_timeout')
      await eventually(() => tunnels.size === 0)
      const r = await upgrade(s.url)
      expect(r.gaveUp).toBeUndefined()
      expect(r.status).toBe(504)
      expect(r.body.error.type).toBe('upstream_timeout')
      await eventually(() => tunnels.size === 0)
    } finally {
      await s.stop()
    }
  }, 60_000)
})
