import { describe, expect, it } from 'vitest'
import { eventually, openConnections, postJson } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { startedForFile } from '../support/for-file'
import { startSilentConnectProxy } from '../support/silent-connect-proxy'
import { startLoggedServer } from './support'

/**
 * A corporate proxy that takes the connection and never answers its CONNECT (stuck, or waiting on
 * a host it cannot reach): opening the connection to the provider is what upstream.connect_timeout_ms
 * bounds, as it is without a proxy, so the agent is answered 504 once that passes, not after
 * first_byte_timeout_ms (600 s by default) or undici's own 300 s wait for the proxy.
 * An HTTP call goes through undici's ProxyAgent, whose wait for the CONNECT answer is the headers
 * timeout of its pool to the proxy (src/main/proxy/call/dispatchers.ts, `clientFactory`): without
 * it the call is answered by the first-byte timeout, in its own words, and this test fails. The
 * CONNECT timer of src/main/http/tunnel.ts is not on this path (node:http's: WebSocket upgrades,
 * the OTLP export): proxy-silent-websocket.test.ts and otel-silent-proxy.test.ts fail without it.
 */

const proxy = startedForFile(() => startSilentConnectProxy())

describe('a proxy that never answers CONNECT', () => {
  it('is a 504 after connect_timeout_ms that says so, recorded once; no tunnel is left open', async () => {
    const s = await startLoggedServer({
      upstream: { proxy: proxy().url, connect_timeout_ms: 300, first_byte_timeout_ms: 8000 },
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
      await eventually(async () => (await openConnections(proxy().server)) === 0)
    } finally {
      await s.stop()
    }
  }, 30_000)
})
