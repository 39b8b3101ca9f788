import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, postJson, request } from '../support/http'
import { startLoggedServer } from './support'

/**
 * The OTLP export to an https:// collector behind a proxy that takes the connection and never
 * answers its CONNECT: each export is given up after otel.timeout_ms, and its connection to the
 * proxy must go with it. https-proxy-agent waits for the proxy's answer for good, so each failed
 * export (one every otel.interval_ms, for as long as the proxy is stuck) left one connection to
 * the proxy open, without end.
 */

let proxy: http.Server
let proxyUrl: string
const tunnels = new Set<Socket>()
let upstream: http.Server
let upstreamUrl: string

beforeAll(async () => {
  proxy = http.createServer()
  proxy.on('connect', (_req: http.IncomingMessage, socket: Socket) => {
    tunnels.add(socket)
    socket.resume()
    socket.on('end', () => socket.destroy())
    socket.on('close', () => tunnels.delete(socket))
    socket.on('error', () => {})
  })
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
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
  for (const s of tunnels) s.destroy()
  await new Promise<void>((r) => proxy.close(() => r()))
  upstream.closeAllConnections()
  await new Promise<void>((r) => upstream.close(() => r()))
})

describe('the OTLP export behind a proxy that never answers CONNECT', () => {
  it('fails each export after otel.timeout_ms and leaves no connection to the proxy open for it', async () => {
    const s = await startLoggedServer({
      upstream: { proxy: proxyUrl },
      providers: { openai: { base_url: `${upstreamUrl}/v1` } },
      otel: { endpoint: 'https://otel.burnrate.test:4318', interval_ms: 500, timeout_ms: 300, traces: false },
    })
    try {
      const call = await postJson(`${s.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] })
      expect(call.status).toBe(200)
      const health = async () => (await request(`${s.url}/api/health`)).json().otel
      await eventually(async () => (await health()).failed_metric_exports >= 4, 15_000)
      // At most the export under way holds one; the failed ones' are closed.
      await eventually(() => tunnels.size <= 1, 10_000).catch(() => {})
      expect(tunnels.size).toBeLessThanOrEqual(1)
    } finally {
      await s.stop()
    }
  }, 60_000)
})
