import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/main/config/load'
import { silentLogger } from '../../src/main/log'
import { createBurnrate } from '../../src/main/server/server'
import { fixture } from '../support/fixtures'
import { eventually, openConnections, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { baseUrlFor, startTestServer } from '../support/server'

/** Slow partial requests cannot take every connection: health and proxied calls keep answering. */
let upstream: MockUpstream
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
})
afterAll(async () => {
  await upstream.close()
})

const CHAT = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
function chat(url: string) {
  return request(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-slowloris-00001' }, body: CHAT })
}

/** Opens a connection and sends the start of a request, never its end. */
function partial(port: number, closed: { n: number }): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.write(`GET /api/health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-A: `)
      resolve(s)
    })
    s.on('error', () => {})
    s.on('close', () => closed.n++)
    s.once('error', reject)
  })
}

describe('thousands of slow partial requests', () => {
  it('are closed to make room past server.max_connections; health and proxied calls keep answering', async () => {
    const t = await startTestServer({ server: { max_connections: 100 } }, upstream.url)
    const port = Number(new URL(t.url).port)
    const closed = { n: 0 }
    const socks: net.Socket[] = []
    try {
      for (let batch = 0; batch < 20; batch++) {
        socks.push(...(await Promise.all(Array.from({ length: 100 }, () => partial(port, closed)))))
      }
      expect((await request(`${t.url}/api/health`)).status).toBe(200)
      expect((await chat(t.url)).status).toBe(200)
      // The server holds at most its cap: the oldest half-sent requests were closed.
      await eventually(() => closed.n >= socks.length - 100, 20_000)
      const open = await new Promise<number>((r) => t.server.http.getConnections((_e, n) => r(n)))
      expect(open).toBeLessThanOrEqual(100)
    } finally {
      for (const s of socks) s.destroy()
      await t.cleanup()
    }
  }, 120_000)

  it('when every connection is busy with a real request, a new one gets a clear 503', async () => {
    const t = await startTestServer({ server: { max_connections: 10 } }, upstream.url)
    const port = Number(new URL(t.url).port)
    const uploads: http.ClientRequest[] = []
    let started = 0
    t.server.http.on('request', () => started++)
    try {
      // Ten uploads with their headers in and their bodies still arriving: busy, never cut.
      for (let i = 0; i < 10; i++) {
        const req = http.request(`${t.url}/v1/chat/completions`, {
          method: 'POST',
          agent: false,
          headers: { 'content-type': 'application/json', authorization: 'Bearer sk-slowloris-00001', 'content-length': String(CHAT.length) },
        })
        req.on('error', () => {})
        req.write(CHAT.slice(0, 5))
        uploads.push(req)
      }
      await eventually(() => started === 10, 10_000)
      // A raw connection, to read exactly what the server says to it.
      const answer = await eventually(
        () =>
          new Promise<string>((resolve) => {
            let text = ''
            const s = net.connect(port, '127.0.0.1', () => s.write(`GET /api/health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`))
            s.on('data', (d) => (text += d.toString()))
            s.on('close', () => resolve(text))
            s.on('error', () => resolve(text))
          }).then((text) => (text.startsWith('HTTP/1.1 503') ? text : undefined)),
        10_000,
      )
      expect(answer).toMatch(/retry-after: 1/i)
      const body = JSON.parse(answer!.slice(answer!.indexOf('\r\n\r\n') + 4))
      expect(body.error.type).toBe('service_unavailable')
      expect(body.error.message).toMatch(/max_connections/)
    } finally {
      for (const u of uploads) u.destroy()
      await t.cleanup()
    }
  })
})

describe('header timeout', () => {
  it('closes a request whose headers never finish, but never cuts an upload whose headers are in', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-slow-'))
    const file = join(dir, 'config.yaml')
    writeFileSync(file, stringify({ server: { port: 0 }, providers: { openai: { base_url: baseUrlFor('openai', upstream.url) } } }))
    const server = createBurnrate(loadConfig({ config: file, dataDir: dir }, {}), { log: silentLogger, headersTimeoutMs: 500 })
    const url = await server.listen()
    const port = Number(new URL(url).port)
    try {
      const closed = { n: 0 }
      const s = await partial(port, closed)
      let answer = ''
      s.on('data', (d) => (answer += d.toString()))
      await eventually(() => closed.n === 1, 15_000)
      expect(answer).toMatch(/^HTTP\/1\.1 40[08]/)

      // Headers in, then the body trickles for well over the header timeout: it completes.
      const status = await new Promise<number>((resolve, reject) => {
        const req = http.request(`${url}/v1/chat/completions`, {
          method: 'POST',
          agent: false,
          headers: { 'content-type': 'application/json', authorization: 'Bearer sk-slowloris-00001', 'content-length': String(CHAT.length) },
        }, (res) => {
          res.resume()
          resolve(res.statusCode ?? 0)
        })
        req.on('error', reject)
        let i = 0
        const step = () => {
          if (i >= 5) {
            req.end(CHAT.slice(5))
            return
          }
          req.write(CHAT[i++])
          setTimeout(step, 500)
        }
        step()
      })
      expect(status).toBe(200)
    } finally {
      await server.close(1000)
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)
})

/** Sends an upgrade request and reads its answer up to the server's end, never closing its own side. */
function upgradeKeptOpen(port: number, target: string, headers = ''): Promise<{ socket: net.Socket; answer: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true })
    let answer = ''
    socket.on('data', (d) => (answer += d.toString()))
    socket.on('end', () => resolve({ socket, answer }))
    socket.on('error', reject)
    socket.write(
      `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${headers}Upgrade: websocket\r\nConnection: Upgrade\r\n` +
        'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    )
  })
}

describe('upgrade requests answered without an upgrade', () => {
  it('have their connections closed, so clients that keep them open cannot take every connection', async () => {
    // (The mock upstream is plain HTTP: it answers an upgrade with a 200, which is relayed.)
    const t = await startTestServer(
      { server: { max_connections: 10 }, providers: { xai: { enabled: false } }, budgets: { rules: [{ api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' }] } },
      upstream.url,
    )
    const port = Number(new URL(t.url).port)
    const kinds: [string, string, RegExp][] = [
      // Answered as the plain request it also is, refused by the cross-site check, a provider turned
      // off, a budget refusal of a Realtime socket, and the upstream's own answer relayed.
      ['/api/health', '', /^HTTP\/1\.1 200 /],
      ['/v1/responses', 'Origin: http://evil.example\r\n', /^HTTP\/1\.1 403 /],
      ['/xai/v1/realtime', '', /^HTTP\/1\.1 404 /],
      ['/v1/realtime?model=gpt-realtime', 'Authorization: Bearer sk-blocked-upgrade-0001\r\n', /^HTTP\/1\.1 429 /],
      ['/v1/responses', 'Authorization: Bearer sk-relayed-upgrade-0001\r\n', /^HTTP\/1\.1 200 /],
    ]
    const kept: net.Socket[] = []
    try {
      for (let i = 0; i < 10; i++) {
        const [target, headers, status] = kinds[i % kinds.length]
        const { socket, answer } = await upgradeKeptOpen(port, target, headers)
        kept.push(socket)
        expect(answer).toMatch(status)
      }
      // Each was closed by the server once answered (before: all ten stayed open, and every new
      // connection, health checks and agents' calls alike, was refused 503 for as long as they did).
      await eventually(async () => (await openConnections(t.server.http)) === 0, 10_000)
      expect((await request(`${t.url}/api/health`)).status).toBe(200)
      expect((await chat(t.url)).status).toBe(200)
    } finally {
      for (const s of kept) s.destroy()
      await t.cleanup()
    }
  })
})
