import http from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { lastLedgerRow, ledgerRows } from '../support/ledger-rows'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { PLAIN_HOST, startConnectProxy, startLoggedServer } from './support'

/**
 * A plain-http upstream (a self-hosted model server) behind an HTTP proxy configured as Squid's
 * default is: CONNECT only to port 443, ordinary requests for http:// URIs forwarded. The call
 * goes as curl, Go and Python's requests send it, an absolute-URI request to the proxy, not a
 * CONNECT tunnel the proxy refuses.
 */

const JSON_BODY = fixture('openai-chat/chat-nonstream-cached.json')
/** A recorded stream's events; the upstream sends the first and holds the rest until `release`. */
const EVENTS = fixture('openai-chat/chat-stream-with-usage.sse')
  .toString()
  .split(/(?<=\n\n)/)
  .map((e) => Buffer.from(e))
let release: () => void = () => {}
const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }
const USER = { user: 'alice', password: 'p@ss word' }
const BASIC = `Basic ${Buffer.from(`${USER.user}:${USER.password}`).toString('base64')}`

let up: MockUpstream
/** The upstream under a name only the proxy resolves: a call that does not go through it cannot reach it. */
let plainUrl: string
beforeAll(async () => {
  up = await startMockUpstream((req) => {
    // A gateway's long policy header (past undici's default 16 KiB) when asked for one.
    const policy: Record<string, string> = req.headers['x-test-long-headers'] ? { 'x-gateway-policy': 'p'.repeat(20_000) } : {}
    if (!JSON.parse(req.body.toString() || '{}').stream) return { status: 200, headers: { 'content-type': 'application/json', ...policy }, body: JSON_BODY }
    const released = new Promise<void>((r) => (release = r))
    return { status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: EVENTS, holdAfterChunks: 1, release: released }
  })
  plainUrl = `http://${PLAIN_HOST}:${new URL(up.url).port}`
})
afterAll(async () => {
  await up?.close()
})

describe('an http:// upstream behind a Squid-like HTTP proxy', () => {
  it('upstream.proxy with credentials: the call is forwarded as an absolute-URI request with Proxy-Authorization, and metered exactly', async () => {
    const proxy = await startConnectProxy(USER, undefined, [443])
    const s = await startLoggedServer({
      upstream: { proxy: `http://alice:${encodeURIComponent(USER.password)}@127.0.0.1:${proxy.port}` },
      providers: { openai: { base_url: `${plainUrl}/v1` } },
    })
    try {
      const res = await postJson(`${s.url}/v1/chat/completions`, CHAT)
      expect(res.status).toBe(200)
      expect(res.json().usage.prompt_tokens).toBe(1149)
      const row = await eventually(() => lastLedgerRow(s.dbFile))
      expect(row).toMatchObject({ status: 200, input_tokens: 1149, cache_read_tokens: 1024, output_tokens: 353 })
      expect(proxy.refused).toEqual([])
      expect(proxy.targets).toEqual([])
      expect(proxy.forwarded).toEqual([new URL(plainUrl).host])
      expect(proxy.forwardedAuth).toEqual([BASIC])
      // The upstream sees the request as sent directly: its path, its Host, no proxy credentials.
      expect(up.requests.at(-1)).toMatchObject({ url: '/v1/chat/completions' })
      expect(up.requests.at(-1)!.headers.host).toBe(new URL(plainUrl).host)
      expect(up.requests.at(-1)!.headers['proxy-authorization']).toBeUndefined()
      expect(s.lines.join('\n')).not.toContain('p@ss')

      // A stream through the proxy still streams: the first event reaches the client before the upstream sends the rest.
      const streamed = await new Promise<string>((resolve, reject) => {
        const req = http.request(`${s.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
          let text = ''
          res.on('data', (c) => {
            if (!text) release()
            text += c
          })
          res.on('end', () => resolve(text))
          res.on('error', reject)
        })
        req.on('error', reject)
        req.end(JSON.stringify({ ...CHAT, stream: true, stream_options: { include_usage: true } }))
      })
      expect(streamed).toContain('[DONE]')
      const rows = await eventually(() => (ledgerRows(s.dbFile).length === 2 ? ledgerRows(s.dbFile) : undefined))
      expect(rows![1]).toMatchObject({ status: 200, input_tokens: 78, output_tokens: 9 })
      expect(proxy.forwarded).toHaveLength(2)
      expect(proxy.refused).toEqual([])
    } finally {
      await s.stop()
      await proxy.close()
    }
  })

  it("wrong credentials: the proxy's 407 is a 502 that says it wants them, recorded once (not a 400 for the client's request)", async () => {
    const proxy = await startConnectProxy(USER, undefined, [443])
    const s = await startLoggedServer({ upstream: { proxy: `http://alice:wrong@127.0.0.1:${proxy.port}` }, providers: { openai: { base_url: `${plainUrl}/v1` } } })
    try {
      const res = await postJson(`${s.url}/v1/chat/completions`, CHAT)
      expect(res.status).toBe(502)
      expect(res.json().error).toMatchObject({ type: 'upstream_unreachable' })
      expect(res.json().error.message).toMatch(/proxy asks for credentials \(407\)/)
      expect(await eventually(() => lastLedgerRow(s.dbFile))).toMatchObject({ status: 502, error: 'upstream_unreachable: PROXY_407' })
      expect(ledgerRows(s.dbFile)).toHaveLength(1)
      expect(proxy.forwarded).toEqual([])
      expect(s.lines.join('\n')).not.toContain('wrong')
    } finally {
      await s.stop()
      await proxy.close()
    }
  })

  it('HTTP_PROXY from the environment, NO_PROXY honoured: a listed host is called directly, not through the proxy', async () => {
    const proxy = await startConnectProxy(null, undefined, [443])
    const saved = { HTTPS_PROXY: process.env.HTTPS_PROXY, HTTP_PROXY: process.env.HTTP_PROXY, NO_PROXY: process.env.NO_PROXY }
    delete process.env.HTTPS_PROXY
    process.env.HTTP_PROXY = proxy.url
    process.env.NO_PROXY = 'direct.burnrate.test'
    let s: Awaited<ReturnType<typeof startLoggedServer>> | undefined
    try {
      s = await startLoggedServer({
        providers: {
          openai: { base_url: `${plainUrl}/v1` },
          mistral: { base_url: `http://api.direct.burnrate.test:${new URL(up.url).port}/v1` },
        },
      })
      expect((await postJson(`${s.url}/v1/chat/completions`, CHAT)).status).toBe(200)
      expect(await eventually(() => lastLedgerRow(s!.dbFile))).toMatchObject({ status: 200, input_tokens: 1149, cache_read_tokens: 1024, output_tokens: 353 })
      // Through the proxy, an answer's headers are taken up to 256 KiB as directly (not undici's default 16 KiB).
      const long = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const req = http.request(`${s!.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-test-long-headers': '1' }, agent: false, maxHeaderSize: 1024 * 1024 }, (res) => {
          res.resume()
          res.on('end', () => resolve(res))
        })
        req.on('error', reject)
        req.end(JSON.stringify(CHAT))
      })
      expect(long.statusCode).toBe(200)
      expect(long.headers['x-gateway-policy']).toHaveLength(20_000)
      // Only the proxy resolves the name: called directly, it cannot be found.
      const direct = await postJson(`${s.url}/mistral/v1/chat/completions`, CHAT)
      expect(direct.status).toBe(502)
      expect(direct.json().error.message).toMatch(/api\.direct\.burnrate\.test could not be resolved \(DNS ENOTFOUND\)/)
      expect(proxy.forwarded).toEqual([new URL(plainUrl).host, new URL(plainUrl).host])
      expect(proxy.forwardedAuth).toEqual([undefined, undefined])
      expect(proxy.targets).toEqual([])
      expect(proxy.refused).toEqual([])
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
