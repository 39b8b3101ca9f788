import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postJson, request } from '../support/http'
import type { MockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { startFixtureUpstream } from './support'

/**
 * The span export goes one request at a time, each given up (README: OpenTelemetry export). The
 * exporter's own `otel.timeout_ms` is a limit on silence: a collector, or a proxy or load balancer
 * in front of it, that answers a byte at a time holds an export for as long as it goes on. The
 * pipeline's guard then took the export for failed and sent the next one beside it, leaving the
 * first open: one more connection held open every few seconds, without end.
 */

let upstream: MockUpstream
let collector: http.Server
let t: TestServer
const answers = new Set<http.ServerResponse>()
let open = 0
let most = 0

beforeAll(async () => {
  upstream = await startFixtureUpstream()
  collector = http.createServer((req, res) => {
    req.resume()
    most = Math.max(most, ++open)
    answers.add(res)
    res.on('close', () => {
      open--
      answers.delete(res)
    })
    // Headers at once, then a space every 100 ms, never the end.
    res.writeHead(200, { 'content-type': 'application/json' })
    const drip = setInterval(() => res.write(' '), 100)
    res.on('close', () => clearInterval(drip))
  })
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r))
  const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`
  t = await startTestServer({ timezone: 'UTC', otel: { endpoint, timeout_ms: 300, metrics: false } }, upstream.url)
})
afterAll(async () => {
  await t?.cleanup()
  for (const r of answers) r.destroy()
  await new Promise((r) => collector?.close(r))
  await upstream?.close()
})

describe('the span export to a collector that answers a byte at a time', () => {
  it('is given up with its connection: never two at once', async () => {
    const chat = { model: 'gpt-4o-mini', messages: [] }
    const headers = { authorization: 'Bearer sk-otel-trickle-0001', 'x-fixture': 'openai-chat/chat-nonstream-cached.json' }
    // Calls for three guards' time (300 ms + 5 s each): every tick has spans to send.
    for (const end = Date.now() + 17_000; Date.now() < end; await new Promise((r) => setTimeout(r, 500))) {
      expect((await postJson(`${t.url}/v1/chat/completions`, chat, headers)).status).toBe(200)
    }
    // Never was the next export sent beside one still open...
    expect(most).toBe(1)
    // ...though exports were given up (each after its guard) and more went after them.
    const otel = (await request(`${t.url}/api/health`)).json().otel
    expect(otel.dropped_spans).toBeGreaterThan(0)
    expect(otel.last_error).toMatch(/^span export/)
  }, 60_000)
})
