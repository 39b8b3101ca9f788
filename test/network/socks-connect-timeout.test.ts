import { describe, expect, it } from 'vitest'
import { eventually, postJson } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { startedForFile } from '../support/for-file'
import { startStallingSocks5 } from '../support/stalling-socks5'
import { upgrade } from '../support/ws-upgrade'
import { SECURE_HOST, startLoggedServer } from './support'

/**
 * A SOCKS5 proxy that stalls: it takes the connection and never answers its greeting, or it
 * grants the tunnel and then swallows what comes (the TLS handshake with the upstream never
 * completes). Opening the connection (the SOCKS5 negotiation and the TLS inside the tunnel) is
 * what upstream.connect_timeout_ms bounds, as it is directly and through an HTTP proxy: the agent
 * is answered 504 once it passes, not after first_byte_timeout_ms (600 s by default) or the SOCKS
 * library's own waits, and the connection to the proxy is closed.
 */

const proxy = startedForFile(startStallingSocks5)

describe('a SOCKS5 proxy that stalls the connection', () => {
  for (const s of ['greeting', 'tunnel'] as const) {
    it(`is a 504 after connect_timeout_ms when it ${s === 'greeting' ? 'never answers its greeting' : 'grants the tunnel and the TLS handshake never completes'}, for a call and a WebSocket`, async () => {
      proxy().stall = s
      // A first-byte limit far past the test's patience: only the connect timeout can answer in time.
      const b = await startLoggedServer({
        upstream: { proxy: proxy().url, connect_timeout_ms: 300, first_byte_timeout_ms: 30_000 },
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
        await eventually(() => proxy().held.size === 0)
        const r = await upgrade(b.url)
        expect(r.gaveUp).toBeUndefined()
        expect(r.status).toBe(504)
        expect(r.body.error.type).toBe('upstream_timeout')
        await eventually(() => proxy().held.size === 0)
      } finally {
        await b.stop()
      }
    }, 90_000)
  }
})
