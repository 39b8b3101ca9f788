import { describe, expect, it } from 'vitest'
import { createEgress } from '../../src/main/http/egress'
import { request as send } from '../../src/main/http/request'
import { eventually } from '../support/http'
import { startedForFile } from '../support/for-file'
import { startStallingSocks5 } from '../support/stalling-socks5'
import { SECURE_HOST } from './support'

/**
 * Burnrate's own calls out (a price update, an alert webhook, a team report) through a SOCKS5
 * proxy that grants the tunnel and then passes nothing on: each call gives up at its own timeout,
 * and the connection it was opening is closed too, as a direct one's is by undici's connect timeout
 * (10 s). undici's SOCKS5 agent waited for the TLS handshake inside the tunnel without limit, so
 * each attempt (a webhook's retries, a price check every few hours) left a connection to the
 * proxy open for good.
 */

// The tunnel is granted; nothing after it is ever answered.
const proxy = startedForFile(startStallingSocks5)

describe("Burnrate's own call through a SOCKS5 proxy whose tunnel passes nothing on", () => {
  it('fails at its own timeout, and the connection to the proxy is closed', async () => {
    const egress = createEgress({ proxy: proxy().url })
    const url = `https://${SECURE_HOST}/hook`
    try {
      await expect(send(url, { method: 'POST', body: '{}', dispatcher: egress.for(url), signal: AbortSignal.timeout(300) })).rejects.toThrow()
      await eventually(() => proxy().granted === 1)
      await eventually(() => proxy().held.size === 0, 30_000)
    } finally {
      await egress.close()
    }
  }, 60_000)
})
