import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { testPayload } from '../../src/main/alerts/payload'
import { WebhookSender } from '../../src/main/alerts/webhooks'
import { ADMIN_CONFIG } from '../admin/support'
import { NANO_COST, NANO_FIXTURE, chat, replayJson } from '../budgets/support'
import { getJson } from '../dashboard/seed'
import { eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { startTestServer } from '../support/server'
import { slowDownReceiver } from './support'

/**
 * README: Alerts → Webhooks. A webhook that answers 429 (Slack's rate limit) or 503 with a
 * Retry-After is tried again no sooner than it asked. The backoff alone (doubled from
 * alerts.backoff_ms) spent every attempt before then, and the alert was lost.
 */

let upstream: MockUpstream

beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
})
afterAll(async () => {
  await upstream.close()
})

const finished = (w: WebhookSender) => eventually(() => (w.deliveries()[0].status === 'pending' ? null : w.deliveries()[0]))

describe('a webhook that answers with Retry-After', () => {
  it('a budget threshold sent to Slack rate-limited for 2 s (429, Retry-After in seconds) arrives on the next attempt', async () => {
    const slack = await slowDownReceiver({ seconds: 2 })
    // Five retries from 20 ms, doubled: all spent within about 0.6 s.
    const t = await startTestServer(
      {
        ...ADMIN_CONFIG,
        alerts: { webhooks: [{ url: `${slack.url}/services/T000/B000/XXXX`, format: 'slack' }], backoff_ms: 20 },
        budgets: { rules: [{ api_key_pattern: 'sk-slow-*', daily_limit_usd: NANO_COST * 2 * (1 - 1e-9), action: 'warn', alert_at_pct: [0.5] }] },
      },
      upstream.url,
    )
    try {
      expect((await chat(t, 'sk-slow-aaaaaaaaaaaa-0001')).status).toBe(200)
      const d = await eventually(async () => {
        const [x] = (await getJson(`${t.url}/api/dashboard/alerts`)).body.deliveries
        return x && x.status !== 'pending' ? x : null
      })
      expect(d).toMatchObject({ type: 'budget.threshold', status: 'delivered', attempts: 2, last_status: 200 })
      expect(slack.early()).toBe(0)
      expect(slack.got).toHaveLength(1)
      expect(slack.got[0].body.text).toContain('alert at 50%')
    } finally {
      await t.cleanup()
      await slack.close()
    }
  })

  it('a 503 whose Retry-After is an HTTP date is retried at that time, not before', async () => {
    const hook = await slowDownReceiver({ seconds: 2, form: 'date', status: 503 })
    const w = new WebhookSender([{ url: `${hook.url}/hook`, format: 'json' }], { retries: 5, backoffMs: 20, timeoutMs: 5_000 })
    try {
      w.send(testPayload('test_date', Date.now()))
      expect(await finished(w)).toMatchObject({ status: 'delivered', attempts: 2 })
      expect(hook.early()).toBe(0)
      expect(hook.got.map((g) => g.body.id)).toEqual(['test_date'])
    } finally {
      await w.close()
      await hook.close()
    }
  })

  it('an absurd Retry-After (10 days) waits the cap at most, and the delivery given up is logged failed', async () => {
    const hook = await slowDownReceiver({ seconds: 864_000 })
    const w = new WebhookSender([{ url: `${hook.url}/hook`, format: 'json' }], { retries: 2, backoffMs: 10, timeoutMs: 5_000, maxRetryAfterMs: 50 })
    try {
      w.send(testPayload('test_absurd', Date.now()))
      expect(await finished(w)).toMatchObject({ status: 'failed', attempts: 3, last_status: 429, last_error: 'HTTP 429' })
      expect(hook.posts()).toBe(3)
    } finally {
      await w.close()
      await hook.close()
    }
  })

  it('a retry waiting on a long Retry-After does not hold shutdown, and is not sent after it', async () => {
    const hook = await slowDownReceiver({ seconds: 864_000 })
    const w = new WebhookSender([{ url: `${hook.url}/hook`, format: 'json' }], { retries: 5, backoffMs: 10, timeoutMs: 5_000 })
    try {
      w.send(testPayload('test_shutdown', Date.now()))
      await eventually(() => w.deliveries()[0].last_status === 429)
      // The retry is due minutes from now (the cap); close() neither waits for it nor sends it.
      await w.close()
      expect(w.deliveries()[0]).toMatchObject({ attempts: 1, last_status: 429 })
      expect(hook.posts()).toBe(1)
    } finally {
      await hook.close()
    }
  })
})
