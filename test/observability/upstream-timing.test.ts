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
