import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { networkInterfaces } from 'node:os'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { startLoggedServer } from './support'

/**
 * NO_PROXY as corporate networks write it: an address range in CIDR notation (`10.0.0.0/8`,
 * `192.168.0.0/16`), which curl, Go, Python's requests and Rust's reqwest (Codex) all honour. A
 * gateway on an internal address in that range is reached directly; the corporate proxy, which
 * does not reach internal addresses, never sees it.
 */

const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }

/** This machine's own non-loopback IPv4 address and its network (a gateway on the LAN, as the proxy sees it). */
const lan = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal && a.cidr)

/** A corporate proxy that reaches nothing internal: every CONNECT and every plain request gets a 403. */
async function refusingProxy(): Promise<{ url: string; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = []
  const server = http.createServer((req, res) => {
    seen.push(req.url ?? '')
    res.writeHead(403).end()
  })
  server.on('connect', (req: http.IncomingMessage, socket: import('node:net').Socket) => {
    seen.push(req.url ?? '')
    socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}

describe.skipIf(!lan)('NO_PROXY with an address range (CIDR)', () => {
  let gateway: http.Server
  let gatewayUrl: string
  beforeAll(async () => {
    gateway = http.createServer((req, res) => {
      req.resume()
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(fixture('openai-chat/chat-nonstream-cached.json')))
    })
    await new Promise<void>((r) => gateway.listen(0, lan!.address, r))
    gatewayUrl = `http://${lan!.address}:${(gateway.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise<void>((r) => gateway.close(() => r())))

  it('a gateway whose address is in a no_proxy range is reached directly, not sent to the proxy', async () => {
    const proxy = await refusingProxy()
    const s = await startLoggedServer({
      upstream: { proxy: proxy.url, no_proxy: [lan!.cidr!], connect_timeout_ms: 2000 },
      providers: { openai: { base_url: `${gatewayUrl}/v1` } },
    })
    try {
      const res = await postJson(`${s.url}/v1/chat/completions`, CHAT)
      expect(proxy.seen).toEqual([])
      expect(res.status).toBe(200)
    } finally {
      await s.stop()
      await proxy.close()
    }
  })

  it('from the environment too (NO_PROXY beside HTTP_PROXY)', async () => {
    const proxy = await refusingProxy()
    const saved = { HTTP_PROXY: process.env.HTTP_PROXY, NO_PROXY: process.env.NO_PROXY, http_proxy: process.env.http_proxy, no_proxy: process.env.no_proxy }
    delete process.env.http_proxy
    delete process.env.no_proxy
    process.env.HTTP_PROXY = proxy.url
    process.env.NO_PROXY = `internal.corp, ${lan!.cidr}`
    let s: Awaited<ReturnType<typeof startLoggedServer>> | undefined
    try {
      s = await startLoggedServer({ upstream: { connect_timeout_ms: 2000 }, providers: { openai: { base_url: `${gatewayUrl}/v1` } } })
      const res = await postJson(`${s.url}/v1/chat/completions`, CHAT)
      expect(proxy.seen).toEqual([])
      expect(res.status).toBe(200)
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k]
        else process.env[k] = v
      }
      await s?.stop()
      await proxy.close()
    }
  })
})
