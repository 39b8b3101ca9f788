import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { alertsOf } from '../../src/main/alerts'
import { receiver, type Receiver } from '../alerts/support'
import { eventually, postJson, request } from '../support/http'
import type { MockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { startFixtureUpstream } from './support'

/**
 * `burnrate_added_latency_seconds` and `burnrate_upstream_first_byte_seconds` time each proxied
 * call's request upstream. A call is tied to its request by an async-local scope around its
 * handling, and what the call set off inside that scope was counted as its upstream request too:
 * a budget alert its cost crossed, POSTed to a webhook while the call was recorded, was a second
 * "upstream request" of the call's provider, timed from the call's arrival (its whole duration as
 * Burnrate's added latency) and the webhook's answer as the provider's time to first byte; so was
 * the report to a team server its recording woke (`team.url`).
 */

let upstream: MockUpstream
let hook: Receiver
let t: TestServer

beforeAll(async () => {
  upstream = await startFixtureUpstream()
  hook = await receiver()
  t = await startTestServer(
    {
      timezone: 'UTC',
      metrics: { enabled: true },
      alerts: { webhooks: [{ url: `${hook.url}/hook` }], retries: 0 },
      budgets: { rules: [{ api_key_pattern: 'sk-timing-*', daily_limit_usd: 0.000001, action: 'warn' }] },
    },
    upstream.url,
  )
})
afterAll(async () => {
  await t?.cleanup()
  await hook?.close()
  await upstream?.close()
})

const count = (text: string, name: string) =>
  text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`))
    .reduce((s, l) => s + Number(l.split(' ').at(-1)), 0)

describe('the upstream timing histograms', () => {
  it('count one upstream request per call, not the budget alert the call set off', async () => {
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, {
      authorization: 'Bearer sk-timing-0001',
      'x-fixture': 'openai-chat/chat-nonstream-cached.json',
    })
    expect(r.status).toBe(200)
    const sender = alertsOf(t.server.context).webhooks
    await eventually(() => hook.got.some((g) => g.body.type === 'budget.threshold') && sender.deliveries().every((d) => d.status !== 'pending'))
    const text = (await request(`${t.url}/metrics`)).text
    expect(count(text, 'burnrate_request_duration_seconds_count')).toBe(1)
    expect(count(text, 'burnrate_added_latency_seconds_count')).toBe(1)
    expect(count(text, 'burnrate_upstream_first_byte_seconds_count')).toBe(1)
  })
})

describe('the upstream timing histograms of a member reporting to a team server', () => {
  it('count one upstream request per call, not the report its recording woke', async () => {
    const team = await receiver()
    const m = await startTestServer({ timezone: 'UTC', metrics: { enabled: true }, team: { url: team.url, token: 'team-token-timing-0001' } }, upstream.url)
    try {
      const r = await postJson(`${m.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, {
        authorization: 'Bearer sk-member-0001',
        'x-fixture': 'openai-chat/chat-nonstream-cached.json',
      })
      expect(r.status).toBe(200)
      await eventually(() => team.got.some((g) => g.path === '/api/ingest'))
      const text = (await request(`${m.url}/metrics`)).text
      expect(count(text, 'burnrate_added_latency_seconds_count')).toBe(1)
      expect(count(text, 'burnrate_upstream_first_byte_seconds_count')).toBe(1)
    } finally {
      await m.cleanup()
      await team.close()
    }
  })
})

/** An upstream that answers the first request of each connection after `ms`, and closes a kept-alive connection under the next one, `ms` after reading it. */
async function closingUnderTheNext(ms: number): Promise<{ url: string; close(): Promise<void> }> {
  const served = new WeakSet<Socket>()
  const models = Buffer.from(JSON.stringify({ object: 'list', data: [{ id: 'gpt-4o-mini', object: 'model' }] }))
  const server = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      const again = served.has(req.socket)
      served.add(req.socket)
      setTimeout(() => (again ? req.socket.destroy() : res.writeHead(200, { 'content-type': 'application/json', 'content-length': models.length }).end(models)), ms)
    })
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
}

describe('the upstream timing histograms of a GET sent again', () => {
  it("count one upstream request per call, Burnrate's time before the first attempt, the provider's from the one it answered", async () => {
    // The second GET goes out on the kept-alive connection, which the upstream closes 400 ms later
    // without an answer: the proxy sends it once more on a fresh connection (test/network/protocol.test.ts).
    const up = await closingUnderTheNext(400)
    const s = await startTestServer({ metrics: { enabled: true }, providers: { openai: { base_url: `${up.url}/v1` } } })
    try {
      expect((await request(`${s.url}/v1/models`)).status).toBe(200)
      expect((await request(`${s.url}/v1/models`)).status).toBe(200)
      const text = (await request(`${s.url}/metrics`)).text
      expect(count(text, 'burnrate_request_duration_seconds_count')).toBe(2)
      expect(count(text, 'burnrate_added_latency_seconds_count')).toBe(2)
      expect(count(text, 'burnrate_upstream_first_byte_seconds_count')).toBe(2)
      // Not the first attempt's 400 ms: Burnrate's own time, for both calls.
      expect(count(text, 'burnrate_added_latency_seconds_sum')).toBeLessThan(0.4)
      // Each answer came 400 ms after the request it answered (no answer's wait counted twice).
      expect(count(text, 'burnrate_upstream_first_byte_seconds_sum')).toBeGreaterThanOrEqual(0.8)
      expect(count(text, 'burnrate_upstream_first_byte_seconds_sum')).toBeLessThan(1.6)
    } finally {
      await s.cleanup()
      await up.close()
    }
  })
})
