import { describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { startedForFile } from '../support/for-file'
import { startSilentServer } from '../support/silent-server'
import { upgrade } from '../support/ws-upgrade'
import { startLoggedServer } from './support'

/**
 * A wss:// upstream that takes the TCP connection and never completes TLS (a middlebox that
 * swallows it): for an HTTP call that is a 504 after upstream.connect_timeout_ms (undici times the
 * handshake), and so it is for Codex's Responses WebSocket, not only after the whole upgrade's
 * time limit (connect_timeout_ms + first_byte_timeout_ms, over ten minutes by default). The
 * connections it opened are closed.
 */

const silent = startedForFile(startSilentServer)

describe('a WebSocket upstream whose TLS handshake never completes', () => {
  it('is answered 504 within connect_timeout_ms, as an HTTP call is, and its connection closed', async () => {
    // A first-byte limit far past the client's patience: only the connect timeout can answer in time.
    const s = await startLoggedServer({
      upstream: { connect_timeout_ms: 300, first_byte_timeout_ms: 60_000 },
      providers: { openai: { base_url: `https://127.0.0.1:${silent().port}/v1` } },
    })
    try {
      const http = await fetch(`${s.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"gpt-4o-mini","messages":[]}' })
      expect(http.status).toBe(504)
      const r = await upgrade(s.url)
      expect(r.gaveUp).toBeUndefined()
      expect(r.status).toBe(504)
      expect(r.body.error.type).toBe('upstream_timeout')
      await eventually(() => silent().held.size === 0)
    } finally {
      await s.stop()
    }
  }, 60_000)
})
