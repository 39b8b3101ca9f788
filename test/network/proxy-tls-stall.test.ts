import { describe, expect, it } from 'vitest'
import { eventually, postJson } from '../support/http'
import { startedForFile } from '../support/for-file'
import { startSilentConnectProxy } from '../support/silent-connect-proxy'
import { upgrade } from '../support/ws-upgrade'
import { SECURE_HOST, startLoggedServer } from './support'

/**
 * A corporate proxy that answers CONNECT and then passes nothing on (the TLS handshake with the
 * upstream inside the tunnel never completes: a filtering proxy that holds it, an upstream that
 * stalls). Opening the connection, the TLS inside the tunnel included, is what
 * upstream.connect_timeout_ms bounds: undici times that handshake for an HTTP call, and a
 * WebSocket upgrade (Codex's Responses socket) is answered 504 as soon, not after the whole
 * upgrade's time limit (connect + first byte, over ten minutes by default).
 */

// The tunnel is granted; the client's TLS hello is read, never answered.
const proxy = startedForFile(() => startSilentConnectProxy({ grant: true }))

describe('a proxy that opens the tunnel and then passes nothing on', () => {
  it('is a 504 after connect_timeout_ms for a call and a WebSocket upgrade alike, and the tunnels are closed', async () => {
    const s = await startLoggedServer({
      upstream: { proxy: proxy().url, connect_timeout_ms: 300, first_byte_timeout_ms: 60_000 },
      providers: { openai: { base_url: `https://${SECURE_HOST}/v1` } },
    })
    try {
      const res = await postJson(`${s.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
      expect(res.status, res.text).toBe(504)
      expect(res.json().error.type).toBe('upstream_timeout')
      await eventually(() => proxy().tunnels.size === 0)
      const r = await upgrade(s.url)
      expect(r.gaveUp).toBeUndefined()
      expect(r.status).toBe(504)
      expect(r.body.error.type).toBe('upstream_timeout')
      await eventually(() => proxy().tunnels.size === 0)
    } finally {
      await s.stop()
    }
  }, 60_000)
})
