import { describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { startedForFile } from '../support/for-file'
import { chatPromptAnswer, startMockUpstream } from '../support/mock-upstream'
import { exportingThrough } from '../support/otel-export'
import { startSilentConnectProxy } from '../support/silent-connect-proxy'

/**
 * The OTLP export to an https:// collector behind a proxy that takes the connection and never
 * answers its CONNECT: each export is given up after otel.timeout_ms, and its connection to the
 * proxy must go with it. https-proxy-agent waits for the proxy's answer for good, so each failed
 * export (one every otel.interval_ms, for as long as the proxy is stuck) left one connection to
 * the proxy open, without end.
 */

const proxy = startedForFile(() => startSilentConnectProxy())
// The provider on this machine: reached directly, not through the proxy.
const upstream = startedForFile(() => startMockUpstream(chatPromptAnswer(10)))

describe('the OTLP export behind a proxy that never answers CONNECT', () => {
  it('fails each export after otel.timeout_ms and leaves no connection to the proxy open for it', async () => {
    await exportingThrough(proxy().url, upstream().url, async (otel) => {
      await eventually(async () => (await otel()).failed_metric_exports >= 4, 15_000)
      // At most the export under way holds one; the failed ones' are closed.
      await eventually(() => proxy().tunnels.size <= 1, 10_000).catch(() => {})
      expect(proxy().tunnels.size).toBeLessThanOrEqual(1)
    })
  }, 60_000)
})
