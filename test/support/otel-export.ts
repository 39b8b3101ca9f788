import { expect } from 'vitest'
import { startLoggedServer } from '../network/support'
import { postJson, request } from './http'

/** /api/health's `otel` section, as the export tests read it. */
export interface OtelHealth {
  failed_metric_exports: number
  last_error: string | null
}

/**
 * The set-up of the tests of the OTLP export behind a proxy that stalls (test/network/otel-socks-stall,
 * otel-silent-proxy): a server whose providers are at `upstreamUrl` (on this machine: reached
 * directly, not through the proxy) and whose metrics go to an https:// collector through the
 * proxy at `proxyUrl`, one export every 500 ms given up after 300 ms (no two exports' connections
 * are open at once). One call is made through it first (answered 200), so each export has
 * something to send; then `check` runs with a reader of the server's `otel` health, and the
 * server is stopped.
 */
export async function exportingThrough(proxyUrl: string, upstreamUrl: string, check: (otel: () => Promise<OtelHealth>) => Promise<void>): Promise<void> {
  const s = await startLoggedServer({
    upstream: { proxy: proxyUrl },
    providers: { openai: { base_url: `${upstreamUrl}/v1` } },
    otel: { endpoint: 'https://otel.burnrate.test:4318', interval_ms: 500, timeout_ms: 300, traces: false },
  })
  try {
    const call = await postJson(`${s.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] })
    expect(call.status).toBe(200)
    await check(async () => (await request(`${s.url}/api/health`)).json().otel)
  } finally {
    await s.stop()
  }
}
