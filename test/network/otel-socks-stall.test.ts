import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, postJson, request } from '../support/http'
import { startLoggedServer } from './support'

/**
 * The OTLP export to an https:// collector behind a SOCKS5 proxy that takes the connection and then
 * stalls: each export is given up after otel.timeout_ms, and its connection to the proxy must go
 * with it. socks-proxy-agent gave the SOCKS5 negotiation 30 s and then waited for the TLS handshake
 * inside the tunnel without limit, so each failed export (one every otel.interval_ms, for as long
 * as the proxy is stuck) left one connection to the proxy open, for good once the tunnel was granted.
 */

/** Where the proxy stops answering: at the client's greeting, or after granting the tunnel. */
type Stall = 'greeting' | 'tunnel'

let stall: Stall = 'tunnel'
let proxy: net.Server
let proxyUrl: string
const held = new Set<net.Socket>()
/** Connections the proxy took, and tunnels it granted, so far. */
let accepted = 0
let granted = 0
let upstream: http.Server
let upstreamUrl: string

beforeAll(async () => {
  proxy = net.createServer((client) => {
    accepted++
    held.add(client)
    client.on('close', () => held.delete(client))
    client.on('error', () => {})
    client.on('end', () => client.destroy())
    if (stall === 'greeting') {
      client.resume()
      return
    }
    client.once('data', () => {
      client.write(Buffer.from([5, 0]))
      client.once('data', () => {
        client.write(Buffer.from([5, 0, 0, 1, 127, 0, 0, 1, 0, 0]))
        granted++
        client.resume()
      })
    })
  })
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
  proxyUrl = `socks5://127.0.0.1:${(proxy.address() as AddressInfo).port}`
  // The provider on this machine: reached directly, not through the proxy.
  upstream = http.createServer((req, res) => {
    req.resume()
    req.on('end', () =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: 10, completion_tokens: 5 } })),
    )
  })
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r))
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`
})
afterAll(async () => {
  for (const s of held) s.destroy()
  await new Promise<void>((r) => proxy.close(() => r()))
  upstream.closeAllConnections()
  await new Promise<void>((r) => upstream.close(() => r()))
})

describe('the OTLP export behind a SOCKS5 proxy that stalls', () => {
  it.each<Stall>(['tunnel', 'greeting'])('fails each export after otel.timeout_ms and leaves no connection to the proxy open for it (stalled at the %s)', async (where) => {
    stall = where
    accepted = 0
    granted = 0
    const s = await startLoggedServer({
      upstream: { proxy: proxyUrl },
      providers: { openai: { base_url: `${upstreamUrl}/v1` } },
      // Exports 500 ms apart, past the 300 ms timeout: no two exports' connections are open at once.
      otel: { endpoint: 'https://otel.burnrate.test:4318', interval_ms: 500, timeout_ms: 300, traces: false },
    })
    try {
      const call = await postJson(`${s.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] })
      expect(call.status).toBe(200)
      const health = async () => (await request(`${s.url}/api/health`)).json().otel
      // Five exports have gone to the proxy, and stalled where this case says.
      await eventually(() => accepted >= 5, 15_000)
      if (where === 'tunnel') await eventually(() => granted >= 5)
      else expect(granted).toBe(0)
      // At most the export under way holds one; the failed ones' are closed.
      await eventually(() => held.size <= 1, 10_000).catch(() => {})
      expect(held.size).toBeLessThanOrEqual(1)
      // Each failed export is counted as such, with what went wrong.
      await eventually(async () => (await health()).failed_metric_exports >= 4)
      expect((await health()).last_error).toMatch(/metric export to https:\/\/otel\.burnrate\.test:4318 failed/)
    } finally {
      await s.stop()
    }
  }, 60_000)
})
