import http from 'node:http'
import type net from 'node:net'
import { type AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { createEgress } from '../../src/main/http/egress'
import { eventually, postJson } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { upgrade } from '../support/ws-upgrade'
import { startLoggedServer } from './support'

/**
 * A corporate proxy that closes the connection instead of answering CONNECT (restarting, or a
 * filter dropping the host), before its answer or part way through it. undici's ProxyAgent took
 * the socket error for one to retry at once: the upstream's pool connected again and again,
 * thousands of CONNECTs a second to the proxy, and the agent's call waited for its first-byte
 * timeout (600 s by default), then a 504 that blamed the provider; Burnrate's own calls out (a
 * price update, a webhook, a team report) for their own timeout. The call is a 502 at once that
 * says the proxy closed the connection, recorded once, after one CONNECT or so.
 */

type Mode = 'close' | 'partial' | 'garbage'

async function closingProxy(mode: Mode): Promise<{ url: string; connects: () => number; close(): Promise<void> }> {
  let connects = 0
  const sockets = new Set<net.Socket>()
  const server = http.createServer()
  server.on('connect', (_req: http.IncomingMessage, socket: net.Socket) => {
    connects++
    sockets.add(socket)
    socket.on('error', () => {})
    if (mode === 'close') socket.destroy()
    else if (mode === 'partial') socket.end('HTTP/1.1 200 Conn')
    else socket.end('HELLO THERE\r\n\r\n')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connects: () => connects,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy()
        server.close(() => r())
      }),
  }
}

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  while (closers.length > 0) await closers.pop()!()
})

describe('a proxy that closes the connection instead of answering CONNECT', () => {
  for (const mode of ['close', 'partial'] as Mode[]) {
    it(`${mode === 'close' ? 'before its answer' : 'part way through its answer'}: the agent's call is a 502 that says so, recorded once; the proxy is not hammered`, async () => {
      const proxy = await closingProxy(mode)
      closers.push(proxy.close)
      const s = await startLoggedServer({
        upstream: { proxy: proxy.url, connect_timeout_ms: 5000, first_byte_timeout_ms: 20_000 },
        providers: { openai: { base_url: 'https://api.openai.example/v1' } },
      })
      closers.push(s.stop)
      const res = await postJson(`${s.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
      expect(res.status).toBe(502)
      expect(res.json().error.type).toBe('upstream_unreachable')
      expect(res.json().error.message).toMatch(/^Could not reach openai at api\.openai\.example: the proxy closed the connection without answering its CONNECT request/)
      const rows = await eventually(() => {
        const r = ledgerRows(s.dbFile)
        return r.length > 0 ? r : undefined
      })
      expect(rows).toHaveLength(1)
      expect(rows?.[0]).toMatchObject({ status: 502, error: 'upstream_unreachable: PROXY_CLOSED', cost_usd: 0 })
      // One CONNECT (a retry on a fresh connection at most adds one), not one after another.
      expect(proxy.connects()).toBeLessThanOrEqual(3)
    }, 40_000)
  }

  it('a proxy that answers CONNECT with what is not HTTP: the 502 blames the proxy, not the provider (nothing reached it, nothing was billed)', async () => {
    const proxy = await closingProxy('garbage')
    closers.push(proxy.close)
    const s = await startLoggedServer({
      upstream: { proxy: proxy.url, connect_timeout_ms: 5000, first_byte_timeout_ms: 20_000 },
      providers: { openai: { base_url: 'https://api.openai.example/v1' } },
    })
    closers.push(s.stop)
    const res = await postJson(`${s.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
    expect(res.status).toBe(502)
    expect(res.json().error.type).toBe('upstream_unreachable')
    // It said the provider answered so, and that the call may have been billed there.
    expect(res.json().error.message).toMatch(/^Could not reach openai at api\.openai\.example: the proxy answered its CONNECT request with what is not HTTP\/1\.1/)
    expect(res.json().error.message).not.toMatch(/billed/)
    const rows = await eventually(() => {
      const r = ledgerRows(s.dbFile)
      return r.length > 0 ? r : undefined
    })
    expect(rows).toHaveLength(1)
    expect(rows?.[0]).toMatchObject({ status: 502, error: 'upstream_unreachable: PROXY_MALFORMED', cost_usd: 0 })
  }, 40_000)

  it("Burnrate's own calls out through it fail at once with the same words", async () => {
    const proxy = await closingProxy('close')
    closers.push(proxy.close)
    const egress = createEgress({ proxy: proxy.url })
    closers.push(() => egress.close())
    const { request } = await import('undici')
    const err = await request('https://prices.example/prices.json', { dispatcher: egress.for('https://prices.example/prices.json') }).then(
      () => null,
      (e: unknown) => e as Error & { code?: string },
    )
    expect(err?.code).toBe('PROXY_CLOSED')
    expect(err?.message).toMatch(/the proxy closed the connection without answering its CONNECT request/)
    expect(proxy.connects()).toBeLessThanOrEqual(3)
  }, 40_000)
})

describe('a WebSocket upgrade through a proxy that answers CONNECT with what is not HTTP', () => {
  it('is a 502 that blames the proxy, not the provider', async () => {
    const proxy = await closingProxy('garbage')
    closers.push(proxy.close)
    const s = await startLoggedServer({
      upstream: { proxy: proxy.url, connect_timeout_ms: 5000, first_byte_timeout_ms: 20_000 },
      providers: { openai: { base_url: 'https://api.openai.example/v1' } },
    })
    closers.push(s.stop)
    const r = await upgrade(s.url, 15_000)
    expect(r.status).toBe(502)
    expect(r.body.error.type).toBe('upstream_unreachable')
    expect(r.body.error.message).toMatch(/^Could not reach openai at api\.openai\.example: the proxy answered its CONNECT request with what is not HTTP\/1\.1/)
    expect(r.body.error.message).not.toMatch(/billed/)
  }, 40_000)
})
