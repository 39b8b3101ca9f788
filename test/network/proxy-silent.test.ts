import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, openConnections, postJson } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { startLoggedServer } from './support'

/**
 * A corporate proxy that takes the connection and never answers its CONNECT (stuck, or waiting on
 * a host it cannot reach): opening the connection to the provider is what upstream.connect_timeout_ms
 * bounds, as it is without a proxy, so the agent is answered 504 once that passes, not after
 * first_byte_timeout_ms (600 s by default) or undici's own 300 s wait for the proxy.
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

describe('a proxy that never answers CONNECT', () => {
  it('is a 504 after connect_timeout_ms that says so, recorded once; no tunnel is left open', async () => {
    const s = await startLoggedServer({
      upstream: { proxy: proxyUrl, connect_timeout_ms: 300, first_byte_timeout_ms: 8000 },
      providers: { openai: { base_url: 'https://api.openai.example/v1' } },
    })
    try {
      for (let i = 0; i < 3; i++) {
        const res = await postJson(`${s.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
        expect(res.status).toBe(504)
        expect(res.json().error.type).toBe('upstream_timeout')
        expect(res.json().error.message).toMatch(/no connection within 300 ms \(the proxy did not answer its CONNECT request\)/)
      }
      const rows = await eventually(() => {
        const r = ledgerRows(s.dbFile)
        return r.length >= 3 ? r : undefined
      })
      expect(rows).toHaveLength(3)
      for (const row of rows ?? []) expect(row).toMatchObject({ status: 504, error: 'upstream_timeout', cost_usd: 0 })
      await eventually(async () => (await openConnections(proxy)) === 0)
    } finally {
      await s.stop()
    }
  }, 30_000)
})
