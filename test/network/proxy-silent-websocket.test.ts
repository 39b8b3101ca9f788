import { describe, expect, it } from 'vitest'
import { eventually, openConnections } from '../support/http'
import { startedForFile } from '../support/for-file'
import { startSilentConnectProxy } from '../support/silent-connect-proxy'
import { upgrade } from '../support/ws-upgrade'
import { startLoggedServer } from './support'

/**
 * Codex's Responses WebSocket behind a corporate proxy that takes the connection and never
 * answers its CONNECT: node:http times the upgrade only once it has its socket, which is after
 * that answer, so the agent waited for good and each attempt left a connection to the proxy open.
 * The CONNECT must be answered within upstream.connect_timeout_ms, as for HTTP calls.
 */

const proxy = startedForFile(() => startSilentConnectProxy())

describe('a WebSocket upgrade through a proxy that never answers CONNECT', () => {
  it('is answered 504 upstream_timeout, and the connections to the proxy are closed', async () => {
    const s = await startLoggedServer({
      upstream: { proxy: proxy().url, connect_timeout_ms: 300, first_byte_timeout_ms: 1000 },
      providers: { openai: { base_url: 'https://api.openai.example/v1' } },
    })
    try {
      for (let i = 0; i < 2; i++) {
        const r = await upgrade(s.url, 15_000)
        expect(r.gaveUp).toBeUndefined()
        expect(r.status).toBe(504)
        expect(r.body.error.type).toBe('upstream_timeout')
      }
      await eventually(async () => (await openConnections(proxy().server)) === 0)
    } finally {
      await s.stop()
    }
  }, 60_000)
})
