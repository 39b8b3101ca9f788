import net, { type AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { eventually, postJson } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { SECURE_HOST, startLoggedServer } from './support'

/**
 * A SOCKS5 proxy that stalls: it takes the connection and never answers its greeting, or it
 * grants the tunnel and then swallows what comes (the TLS handshake with the upstream never
 * completes). Opening the connection (the SOCKS5 negotiation and the TLS inside the tunnel) is
 * what upstream.connect_timeout_ms bounds, as it is directly and through an HTTP proxy: the agent
 * is answered 504 once it passes, not after first_byte_timeout_ms (600 s by default) or the SOCKS
 * library's own waits, and the connection to the proxy is closed.
 */

type Stall = 'greeting' | 'tls'
let stall: Stall = 'greeting'
let proxy: net.Server
let proxyUrl: string
const held = new Set<net.Socket>()

beforeAll(async () => {
  proxy = net.createServer((client) => {
    held.add(client)
    client.on('close', () => held.delete(client))
    client.on('error', () => {})
    client.on('end', () => client.destroy())
    if (stall === 'greeting') {
      client.resume()
      return
    }
    client.once('data', () => {
      client.write(Buffer.from([5, 0])) // no authentication
      client.once('data', () => {
        // The tunnel is granted; nothing after it is ever answered.
        client.write(Buffer.from([5, 0, 0, 1, 127, 0, 0, 1, 0, 0]))
        client.resume()
      })
    })
  })
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
  proxyUrl = `socks5://127.0.0.1:${(proxy.address() as AddressInfo).port}`
})
afterAll(async () => {
  for (const s of held) s.destroy()
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

describe('a SOCKS5 proxy that stalls the connection', () => {
  for (const s of ['greeting', 'tls'] as const) {
    it(`is a 504 after connect_timeout_ms when it ${s === 'greeting' ? 'never answers its greeting' : 'grants the tunnel and the TLS handshake never completes'}, for a call and a WebSocket`, async () => {
      stall = s
      // A first-byte limit far past the test's patience: only the connect timeout can answer in time.
      const b = await startLoggedServer({
        upstream: { proxy: proxyUrl, connect_timeout_ms: 300, first_byte_timeout_ms: 30_000 },
        providers: { openai: { base_url: `https://${SECURE_HOST}/v1` } },
      })
      try {
        const res = await postJson(`${b.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
        expect(res.status, res.text).toBe(504)
        expect(res.json().error.type).toBe('upstream_timeout')
        expect(res.json().error.message).toMatch(/no connection within 300 ms/)
        const rows = await eventually(() => {
          const r = ledgerRows(b.dbFile)
          return r.length >= 1 ? r : undefined
        })
        expect(rows?.[0]).toMatchObject({ status: 504, error: 'upstream_timeout', cost_usd: 0 })
        await eventually(() => held.size === 0)
        const r = await upgrade(b.url)
        expect(r.gaveUp).toBeUndefined()
        expect(r.status).toBe(504)
        expect(r.body.error.type).toBe('upstream_timeout')
        await eventually(() => held.size === 0)
      } finally {
        await b.stop()
      }
    }, 90_000)
  }
})
