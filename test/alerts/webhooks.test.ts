import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { formatUsdPair } from '../../src/shared/format'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { NANO_COST, NANO_FIXTURE, callsOf, chat, replayJson } from '../budgets/support'
import { getJson } from '../dashboard/seed'
import { eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { type Receiver, receiver } from './support'

let upstream: MockUpstream
let t: TestServer
let json: Receiver
let slack: Receiver

beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
  json = await receiver()
  slack = await receiver(2) // fails twice, then takes it: retried with backoff
  t = await startTestServer(
    {
      ...ADMIN_CONFIG,
      alerts: {
        webhooks: [
          { url: `${json.url}/hooks/secret-path-123`, format: 'json' },
          { url: `${slack.url}/services/T000/B000/XXXX`, format: 'slack' },
        ],
        backoff_ms: 20,
      },
      // Ten calls reach the limit: 50, 80, 90 and 100% are crossed on calls 5, 8, 9 and 10.
      budgets: { rules: [{ api_key_pattern: 'sk-alert-*', daily_limit_usd: NANO_COST * 10 * (1 - 1e-9), action: 'warn' }] },
    },
    upstream.url,
  )
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
  await json.close()
  await slack.close()
})

describe('budget threshold alerts to webhooks', () => {
  it('a loopback receiver gets each threshold once, with rule, window, spent, limit and forecast', async () => {
    const key = 'sk-alert-aaaaaaaaaaaa-0001'
    for (let i = 0; i < 14; i++) {
      expect((await chat(t, key)).status).toBe(200)
      await eventually(() => callsOf(t, key).length === i + 1)
    }
    await eventually(() => json.got.length === 4 && slack.got.length === 4, 10_000)
    const events = json.got.map((g) => g.body)
    expect(events.map((e) => e.threshold_pct)).toEqual([0.5, 0.8, 0.9, 1])
    expect(json.got.every((g) => g.path === '/hooks/secret-path-123')).toBe(true)
    const last = events[3]
    expect(last).toMatchObject({
      type: 'budget.threshold',
      rule: { api_key_pattern: 'sk-alert-*', source: 'config', action: 'warn' },
      window: { period: 'daily', window_hours: null },
      limit_usd: NANO_COST * 10 * (1 - 1e-9),
    })
    expect(last.spent_usd).toBeCloseTo(NANO_COST * 10, 15)
    expect(last.forecast).toEqual({ projected_usd: expect.any(Number), exhausted_at: expect.any(String), burn_rate_usd_per_hour: expect.any(Number) })
    expect(events[0].spent_usd).toBeCloseTo(NANO_COST * 5, 15)
    expect(slack.got.map((g) => g.body.text)).toEqual(expect.arrayContaining([expect.stringContaining('alert at 100%')]))
    // Its money as the dashboard shows it: a budget under a cent is not "$0.00 of its $0.00".
    const texts = slack.got.map((g) => g.body.text as string)
    expect(texts.join('\n')).not.toMatch(/\$0\.00(?!\d)/)
    // The pair as the dashboard's budget bars read it (two amounts that differ never read the same).
    const [spent, limit] = formatUsdPair(last.spent_usd, last.limit_usd)
    expect(spent).not.toBe(limit)
    expect(texts).toEqual(expect.arrayContaining([expect.stringContaining(`has spent ${spent} of its ${limit} daily`)]))
    // Four more calls over the limit cross nothing new.
    expect(json.got).toHaveLength(4)
  })

  it('the delivery log shows each delivery, its attempts and no webhook path', async () => {
    const log = (await getJson(`${t.url}/api/dashboard/alerts`)).body
    expect(log.webhooks).toBe(2)
    expect(log.deliveries).toHaveLength(8)
    expect(log.deliveries.every((d: any) => d.status === 'delivered')).toBe(true)
    const retried = log.deliveries.filter((d: any) => d.format === 'slack').map((d: any) => d.attempts)
    expect(retried.reduce((a: number, b: number) => a + b, 0)).toBe(4 + 2)
    expect(JSON.stringify(log)).not.toContain('secret-path')
    expect(JSON.stringify(log)).not.toContain('XXXX')
    expect(log.deliveries[0].url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/…$/)
  })

  it('POST /api/admin/alerts/test sends a test alert to every webhook and answers with the outcome', async () => {
    const r = await admin(t.url, 'POST', '/alerts/test')
    expect(r.status).toBe(200)
    const d = r.json().deliveries
    expect(d).toHaveLength(2)
    expect(d.map((x: any) => x.status)).toEqual(['delivered', 'delivered'])
    expect(json.got.at(-1)!.body.type).toBe('test')
    expect(slack.got.at(-1)!.body.text).toMatch(/^Burnrate test alert/)
  })

  it('a webhook that never answers 2xx is retried, then marked failed', async () => {
    const dead = await receiver(1000)
    const t2 = await startTestServer({ ...ADMIN_CONFIG, alerts: { webhooks: [{ url: dead.url }], retries: 2, backoff_ms: 10 } }, upstream.url)
    try {
      const first = (await admin(t2.url, 'POST', '/alerts/test')).json().deliveries[0]
      expect(first).toMatchObject({ attempts: 1, last_status: 500, last_error: 'HTTP 500' })
      const done = await eventually(async () => {
        const d = (await getJson(`${t2.url}/api/dashboard/alerts`)).body.deliveries[0]
        return d.status === 'failed' ? d : null
      }, 10_000)
      expect(done.attempts).toBe(3)
      const none = await startTestServer({ ...ADMIN_CONFIG }, upstream.url)
      try {
        expect((await admin(none.url, 'POST', '/alerts/test')).status).toBe(409)
      } finally {
        await none.cleanup()
      }
    } finally {
      await t2.cleanup()
      await dead.close()
    }
  })
})
