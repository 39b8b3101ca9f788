import { describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { startedForFile } from '../support/for-file'
import { chatPromptAnswer, startMockUpstream } from '../support/mock-upstream'
import { exportingThrough } from '../support/otel-export'
import { type Socks5Stall, startStallingSocks5 } from '../support/stalling-socks5'

/**
 * The OTLP export to an https:// collector behind a SOCKS5 proxy that takes the connection and then
 * stalls: each export is given up after otel.timeout_ms, and its connection to the proxy must go
 * with it. socks-proxy-agent gave the SOCKS5 negotiation 30 s and then waited for the TLS handshake
 * inside the tunnel without limit, so each failed export (one every otel.interval_ms, for as long
 * as the proxy is stuck) left one connection to the proxy open, for good once the tunnel was granted.
 */

const proxy = startedForFile(startStallingSocks5)
// The provider on this machine: reached directly, not through the proxy.
const upstream = startedForFile(() => startMockUpstream(chatPromptAnswer(10)))

describe('the OTLP export behind a SOCKS5 proxy that stalls', () => {
  it.each<Socks5Stall>(['tunnel', 'greeting'])('fails each export after otel.timeout_ms and leaves no connection to the proxy open for it (stalled at the %s)', async (where) => {
    proxy().stall = where
    proxy().accepted = 0
    proxy().granted = 0
    await exportingThrough(proxy().url, upstream().url, async (otel) => {
      // Five exports have gone to the proxy, and stalled where this case says.
      await eventually(() => proxy().accepted >= 5, 15_000)
      if (where === 'tunnel') await eventually(() => proxy().granted >= 5)
      else expect(proxy().granted).toBe(0)
      // At most the export under way holds one; the failed ones' are closed.
      await eventually(() => proxy().held.size <= 1, 10_000).catch(() => {})
      expect(proxy().held.size).toBeLessThanOrEqual(1)
      // Each failed export is counted as such, with what went wrong.
      await eventually(async () => (await otel()).failed_metric_exports >= 4)
      expect((await otel()).last_error).toMatch(/metric export to https:\/\/otel\.burnrate\.test:4318 failed/)
    })
  }, 60_000)
})
