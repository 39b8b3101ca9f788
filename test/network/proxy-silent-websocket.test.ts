import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { eventually, openConnections } from '../support/http'
import { startLoggedServer } from './support'

/**
 * Codex's Responses WebSocket behind a corporate proxy that takes the connection and never
 * answers its CONNECT: node:http times the upgrade only once it has its socket, which is after
 * that answer, so the agent waited for good and each attempt left a connection to the proxy open.
 * The CONNECT must be answered within upstream.connect_timeout_ms, as for HTTP calls.
 */

let proxy: http.Server
let proxyUrl: string
const tunnels = new Set<Socket>()

beforeAll(async () => {
  proxy = http.createServer()
  proxy.on('connect', (_req: http.IncomingMessage, socket: Socket) => {
    // Read, never answered; closed when Burnrate closes its side.
    tunnels.add(socket)
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

/** The upgrade's answer, or `gaveUp` when none came before the client stopped waiting. */
function upgrade(url: string): Promise<{ status?: number; body?: any; gaveUp?: boolean }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/v1/responses`, { headers: { authorization: 'Bearer sk-test' } })
    const giveUp = setTimeout(() => {
      ws.terminate()
      resolve({ gaveUp: true })
    }, 15_000)
    ws.on('unexpected-response', (_req, res) => {
      let text = ''
      res.on('data', (c) => (text += c))
      res.on('end', () => {
        clearTimeout(giveUp)
        resolve({ status: res.statusCode, body: JSON.parse(text) })
      })
    })
    ws.on('error', () => {})
    ws.on('open', () => {
      clearTimeout(giveUp)
      ws.terminate()
      resolve({ status: 101 })
    })
  })
}

describe('a WebSocket upgrade through a proxy that never answers CONNECT', () => {
  it('is answered 504 upstream_timeout, and the connections to the proxy are closed', async () => {
    const s = await startLoggedServer({
      upstream: { proxy: proxyUrl, connect_timeout_ms: 300, first_byte_timeout_ms: 1000 },
      providers: { openai: { base_url: 'https://api.openai.example/v1' } },
    })
    try {
      for (let i = 0; i < 2; i++) {
        const r = await upgrade(s.url)
        expect(r.gaveUp).toBeUndefined()
        expect(r.status).toBe(504)
        expect(r.body.error.type).toBe('upstream_timeout')
      }
      await eventually(async () => (await openConnections(proxy)) === 0)
    } finally {
      await s.stop()
    }
  }, 60_000)
})
