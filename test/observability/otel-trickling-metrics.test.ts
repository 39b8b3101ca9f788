import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, describe, expect, it } from 'vitest'
import { eventually, postJson, request } from '../support/http'
import type { MockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { startFixtureUpstream } from './support'

/**
 * The metric export is given up, and its connection closed, after `otel.timeout_ms`, or when the
 * next interval's export is due (README: OpenTelemetry export). The SDK's periodic reader stops
 * waiting at the interval but not the export, and the exporter's own timeout is a limit on
 * silence: a collector, or a proxy or load balancer in front of it, that answers a byte at a time
 * kept each export's connection open while the next interval's went beside it, one more
 * connection every interval, without end.
 */

const cleanups: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const c of cleanups.reverse()) await c()
})

/** A collector that sends its headers at once, then a space every 100 ms, never the end. */
async function tricklingCollector(): Promise<{ url: string; open(): number; most(): number; requests(): number }> {
  const answers = new Set<http.ServerResponse>()
  let open = 0
  let most = 0
  let requests = 0
  const server = http.createServer((req, res) => {
    req.resume()
    requests++
    most = Math.max(most, ++open)
    answers.add(res)
    res.writeHead(200, { 'content-type': 'application/json' })
    const drip = setInterval(() => res.write(' '), 100)
    res.on('close', () => {
      clearInterval(drip)
      open--
      answers.delete(res)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  cleanups.push(async () => {
    for (const r of answers) r.destroy()
    await new Promise((r) => server.close(r))
  })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, open: () => open, most: () => most, requests: () => requests }
}

async function serverFor(otel: Record<string, unknown>): Promise<TestServer> {
  const upstream: MockUpstream = await startFixtureUpstream()
  cleanups.push(() => upstream.close())
  const t = await startTestServer({ timezone: 'UTC', otel: { ...otel, traces: false } }, upstream.url)
  cleanups.push(() => t.cleanup())
  const chat = { model: 'gpt-4o-mini', messages: [] }
  const headers = { authorization: 'Bearer sk-otel-trickle-0002', 'x-fixture': 'openai-chat/chat-nonstream-cached.json' }
  expect((await postJson(`${t.url}/v1/chat/completions`, chat, headers)).status).toBe(200)
  return t
}

describe('the metric export to a collector that answers a byte at a time', () => {
  it('is given up with its connection after otel.timeout_ms: never two at once', async () => {
    const c = await tricklingCollector()
    const t = await serverFor({ endpoint: c.url, timeout_ms: 300, interval_ms: 500 })
    // Six exports sent, each given up.
    await eventually(() => (c.requests() >= 6 ? true : null), 30_000)
    expect(c.most()).toBe(1)
    const otel = (await request(`${t.url}/api/health`)).json().otel
    expect(otel.failed_metric_exports).toBeGreaterThan(0)
    expect(otel.last_error).toMatch(/^metric export/)
  }, 60_000)

  it('with otel.timeout_ms longer than the interval, is given up when the next is due: the connections do not pile up', async () => {
    const c = await tricklingCollector()
    await serverFor({ endpoint: c.url, timeout_ms: 5000, interval_ms: 300 })
    // Eight exports sent: each but the latest given up, its connection closed.
    await eventually(() => (c.requests() >= 8 ? true : null), 30_000)
    await eventually(() => (c.open() <= 1 ? true : null), 10_000)
    // The next is sent as the one before is closed: at most the two at one moment.
    expect(c.most()).toBeLessThanOrEqual(2)
  }, 60_000)
})
