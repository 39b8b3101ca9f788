import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, postJson, request } from '../support/http'
import { startConnectProxy, startLoggedServer } from './support'

/**
 * The OTLP export to an http:// collector (http://otel.corp:4318) behind an http:// proxy goes to
 * it as ordinary requests for the collector's absolute URI, with the proxy URL's credentials, as
 * Burnrate's other calls to http:// addresses do: Squid's default configuration refuses CONNECT
 * to any port but 443, so a tunnelled export never arrived. The collector is a host name only the
 * proxy resolves: an export that does not go through the proxy cannot reach it.
 */

const COLLECTOR = 'otel.burnrate.test'

let outside: http.Server
let port = 0
const got: string[] = []

beforeAll(async () => {
  outside = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      got.push(req.url ?? '')
      res.setHeader('content-type', 'application/json')
      if (req.url === '/v1/chat/completions') res.end(JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: 10, completion_tokens: 5 } }))
      else res.end('{}')
    })
  })
  await new Promise<void>((r) => outside.listen(0, '127.0.0.1', r))
  port = (outside.address() as AddressInfo).port
})
afterAll(async () => {
  outside.closeAllConnections()
  await new Promise<void>((r) => outside.close(() => r()))
})

describe('the OTLP export to an http:// collector behind a proxy that refuses CONNECT but to port 443', () => {
  it('reaches the collector through it as ordinary requests for its absolute URI, with the proxy credentials', async () => {
    const proxy = await startConnectProxy({ user: 'otel', password: 'p@ss' }, [COLLECTOR], [443])
    const s = await startLoggedServer({
      upstream: { proxy: `http://otel:${encodeURIComponent('p@ss')}@127.0.0.1:${proxy.port}` },
      providers: { openai: { base_url: `http://${COLLECTOR}:${port}/v1` } },
      otel: { endpoint: `http://${COLLECTOR}:${port}`, interval_ms: 200 },
    })
    try {
      const call = await postJson(`${s.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: 'Bearer sk-proj-otel-0001' })
      expect(call.status).toBe(200)
      // Its span and the metrics, exported to the collector.
      await eventually(() => got.includes('/v1/traces') && got.includes('/v1/metrics'), 15_000)
      const health = (await request(`${s.url}/api/health`)).json()
      expect(health.otel).toMatchObject({ last_error: null })
      expect(health.otel.exported_spans).toBeGreaterThanOrEqual(1)
      expect(proxy.refused).toEqual([])
      expect(proxy.targets).toEqual([])
      expect(new Set(proxy.forwarded)).toEqual(new Set([`${COLLECTOR}:${port}`]))
      const auth = `Basic ${Buffer.from('otel:p@ss').toString('base64')}`
      expect(new Set(proxy.forwardedAuth)).toEqual(new Set([auth]))
    } finally {
      await s.stop()
      await proxy.close()
    }
  }, 60_000)
})
