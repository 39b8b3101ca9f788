import { readFileSync, rmSync } from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TOKEN } from '../admin/support'
import { createEgress } from '../../src/main/http/egress'
import { request as send } from '../../src/main/http/request'
import { eventually, postJson, request } from '../support/http'
import { newerPriceData } from '../support/price-data'
import { SECURE_HOST, makePrivateCa, startConnectProxy, startHttpsUpstream, startLoggedServer, startSocks5Proxy } from './support'

/**
 * Behind a corporate proxy that allows nothing else out, Burnrate's own calls (price updates,
 * alert webhooks, reports to a team server, OTLP export) go through it like proxied calls. The outside here
 * is a host name only the proxy resolves: a call that does not go through the proxy cannot
 * reach it.
 */

const OUTSIDE = 'outside.burnrate.test'

describe("Burnrate's own calls out behind a corporate proxy", () => {
  let outside: http.Server
  let port = 0
  const got: { method: string; url: string; body: string }[] = []

  beforeAll(async () => {
    const prices = await newerPriceData({ openai: [{ id: 'gpt-6.1-sol', match: { equals: 'gpt-6.1-sol' }, prices: { input_mtok: 3, output_mtok: 12 } }] })
    outside = http.createServer((req, res) => {
      let body = ''
      req.on('data', (c) => (body += c))
      req.on('end', () => {
        got.push({ method: req.method ?? '', url: req.url ?? '', body })
        res.setHeader('content-type', 'application/json')
        if (req.url === '/prices.json') res.end(JSON.stringify(prices))
        else if (req.url === '/hook' || req.url === '/v1/traces') res.end('{}')
        else if (req.url === '/api/ingest') res.end(JSON.stringify({ accepted: JSON.parse(body).calls.length, duplicates: 0, revised: 0, rejected: [] }))
        else if (req.url === '/v1/chat/completions') res.end(JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-6.1-sol', choices: [], usage: { prompt_tokens: 1000, completion_tokens: 10 } }))
        else res.writeHead(404).end('{}')
      })
    })
    await new Promise<void>((r) => outside.listen(0, '127.0.0.1', r))
    port = (outside.address() as AddressInfo).port
  })
  afterAll(async () => {
    outside.closeAllConnections()
    await new Promise<void>((r) => outside.close(() => r()))
  })

  for (const from of ['upstream.proxy', 'HTTPS_PROXY'] as const) {
    it(`${from}: the price update, a webhook, the team report and the OTLP export all go through it`, async () => {
      const proxy = await startConnectProxy(null, [OUTSIDE])
      const at = `http://${OUTSIDE}:${port}`
      const saved = { HTTPS_PROXY: process.env.HTTPS_PROXY, HTTP_PROXY: process.env.HTTP_PROXY }
      if (from === 'HTTPS_PROXY') process.env.HTTPS_PROXY = process.env.HTTP_PROXY = proxy.url
      got.length = 0
      const s = await startLoggedServer({
        ...(from === 'upstream.proxy' ? { upstream: { proxy: proxy.url } } : {}),
        admin: { enabled: true, token: TOKEN },
        providers: { openai: { base_url: `${at}/v1` } },
        pricing: { update_url: `${at}/prices.json`, auto_update: false },
        alerts: { webhooks: [{ url: `${at}/hook` }], retries: 0 },
        team: { url: at, token: 'team-token-0123456789' },
        otel: { endpoint: at, metrics: false },
      })
      try {
        // The price update: the new model is priced from the data fetched through the proxy.
        expect(await s.server.context.prices!.updater.update()).toBe(true)
        expect((await request(`${s.url}/api/dashboard/prices`)).json()).toMatchObject({ source: 'updated', last_error: null })
        // A test alert to the webhook.
        const alert = await request(`${s.url}/api/admin/alerts/test`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } })
        expect(alert.json().deliveries).toMatchObject([{ status: 'delivered', last_status: 200 }])
        // A proxied call, recorded and reported to the team server.
        const call = await postJson(`${s.url}/v1/chat/completions`, { model: 'gpt-6.1-sol', messages: [] }, { authorization: 'Bearer sk-proj-behind-proxy-0001' })
        expect(call.status).toBe(200)
        const ingest = await eventually(() => got.find((g) => g.url === '/api/ingest'), 15_000)
        expect(JSON.parse(ingest!.body).calls).toMatchObject([{ model: 'gpt-6.1-sol', cost_usd: 0.00312 }])
        // Its span, exported to the collector.
        await eventually(() => got.some((g) => g.url === '/v1/traces'), 15_000)
        expect([...new Set(got.map((g) => g.url))].sort()).toEqual(['/api/ingest', '/hook', '/prices.json', '/v1/chat/completions', '/v1/traces'])
        // The http:// calls as ordinary requests for their absolute URI, the OTLP export (node:http) too.
        expect(new Set(proxy.forwarded)).toEqual(new Set([`${OUTSIDE}:${port}`]))
        expect(proxy.forwarded.length).toBeGreaterThanOrEqual(5)
        expect(proxy.targets).toEqual([])
      } finally {
        for (const [k, v] of Object.entries(saved)) {
          if (v === undefined) delete process.env[k]
          else process.env[k] = v
        }
        await s.stop()
        await proxy.close()
      }
    })
  }
})

describe('an http:// host behind a proxy that, as Squid by default, refuses CONNECT but to port 443', () => {
  it('is reached through it by an ordinary request for its absolute URI, with the proxy credentials', async () => {
    const outside = http.createServer((req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end(`got ${req.url}`))
    await new Promise<void>((r) => outside.listen(0, '127.0.0.1', r))
    const url = `http://${OUTSIDE}:${(outside.address() as AddressInfo).port}/prices.json`
    const proxy = await startConnectProxy({ user: 'bob', password: 's3cret' }, [OUTSIDE], [443])
    const egress = createEgress({ proxy: `http://bob:s3cret@127.0.0.1:${proxy.port}` })
    try {
      const res = await send(url, { dispatcher: egress.for(url) })
      expect([res.statusCode, await res.body.text()]).toEqual([200, 'got /prices.json'])
      expect(proxy.refused).toEqual([])
      expect(proxy.forwarded).toEqual([new URL(url).host])
      expect(proxy.forwardedAuth).toEqual([`Basic ${Buffer.from('bob:s3cret').toString('base64')}`])
    } finally {
      await egress.close()
      await proxy.close()
      outside.closeAllConnections()
      await new Promise<void>((r) => outside.close(() => r()))
    }
  })
})

describe('an HTTPS host signed by a private CA, behind the proxy', () => {
  it('is trusted with upstream.ca_file by both ways out (undici for updates, webhooks and reports; node:http for OTLP)', async () => {
    const ca = makePrivateCa()
    const tls = await startHttpsUpstream(ca, (_q, r) => r.writeHead(200, { 'content-type': 'text/plain' }).end('inside'))
    const proxy = await startConnectProxy()
    const url = `https://${SECURE_HOST}:${new URL(tls.url).port}/hello`
    const egress = createEgress({ proxy: proxy.url, ca: [readFileSync(ca.caFile, 'utf8')] })
    const untrusted = createEgress({ proxy: proxy.url })
    try {
      const viaUndici = await send(url, { dispatcher: egress.for(url) })
      expect([viaUndici.statusCode, await viaUndici.body.text()]).toEqual([200, 'inside'])
      const agent = await egress.nodeAgent(url)!
      const viaNode = await new Promise<string>((resolve, reject) => {
        https.get(url, { agent }, (res) => {
          let text = ''
          res.on('data', (c) => (text += c))
          res.on('end', () => resolve(`${res.statusCode} ${text}`))
        }).on('error', reject)
      })
      expect(viaNode).toBe('200 inside')
      expect(proxy.targets.length).toBeGreaterThanOrEqual(2)
      expect(new Set(proxy.targets)).toEqual(new Set([new URL(url).host]))
      // Without the CA, the same host is refused: the trust comes from upstream.ca_file.
      await expect(send(url, { dispatcher: untrusted.for(url) })).rejects.toMatchObject({ code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' })
    } finally {
      await egress.close()
      await untrusted.close()
      await proxy.close()
      await tls.close()
      rmSync(ca.dir, { recursive: true, force: true })
    }
  })
})

describe('the OTLP export (node:http) through a SOCKS5 proxy', () => {
  it('reaches an https:// host signed by the private CA and an http:// one through it, the proxy resolving their names', async () => {
    const ca = makePrivateCa()
    const tls = await startHttpsUpstream(ca, (q, r) => r.writeHead(200, { 'content-type': 'text/plain' }).end(`inside ${q.url}`))
    const plain = http.createServer((q, r) => r.writeHead(200, { 'content-type': 'text/plain' }).end(`plain ${q.url}`))
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r))
    const proxy = await startSocks5Proxy([SECURE_HOST, OUTSIDE])
    const secureUrl = `https://${SECURE_HOST}:${new URL(tls.url).port}/v1/traces`
    const plainUrl = `http://${OUTSIDE}:${(plain.address() as AddressInfo).port}/v1/metrics`
    const egress = createEgress({ proxy: proxy.url.replace(/^socks5:/, 'socks5h:'), ca: [readFileSync(ca.caFile, 'utf8')] })
    const get = (mod: typeof http | typeof https, url: string, agent: http.Agent) =>
      new Promise<string>((resolve, reject) => {
        mod.get(url, { agent }, (res) => {
          let text = ''
          res.on('data', (c) => (text += c))
          res.on('end', () => resolve(`${res.statusCode} ${text}`))
        }).on('error', reject)
      })
    try {
      expect(await get(https, secureUrl, await egress.nodeAgent(secureUrl, 5000)!)).toBe('200 inside /v1/traces')
      expect(await get(http, plainUrl, await egress.nodeAgent(plainUrl, 5000)!)).toBe('200 plain /v1/metrics')
      expect(proxy.targets).toEqual([new URL(secureUrl).host, new URL(plainUrl).host])
    } finally {
      await egress.close()
      await proxy.close()
      await tls.close()
      plain.closeAllConnections()
      await new Promise<void>((r) => plain.close(() => r()))
      rmSync(ca.dir, { recursive: true, force: true })
    }
  })
})
