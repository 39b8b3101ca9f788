import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { alertsOf, sendTestAlert } from '../../src/main/alerts'
import { hashKey } from '../../src/main/proxy/attribution'
import { NANO_COST, NANO_FIXTURE, callsOf, chat, replayJson } from '../budgets/support'
import { eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { startTestServer } from '../support/server'
import { receiver } from './support'

/**
 * On SQLite (one instance), a threshold's webhook alert whose retry was still waiting at shutdown
 * (a deploy, a restart while the webhook was down) was dropped: the threshold was kept as
 * announced (budget_announced), so the server started again never sent it, and nothing recorded
 * that it had not been delivered. Such an alert is kept, and sent once by the next start.
 */

let upstream: MockUpstream
beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
})
afterAll(() => upstream.close())

const KEY = 'sk-down-aaaaaaaaaaaa-0001'

describe('a webhook retry waiting at shutdown (SQLite)', () => {
  it('is sent by the server started again, once, and is logged failed, not pending, as it is dropped', async () => {
    // Down at first (500), then up: the first attempt fails, the retry waits a minute.
    const hook = await receiver(1)
    const config = {
      timezone: 'UTC',
      alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 60_000, retries: 3 },
      budgets: { rules: [{ api_key_pattern: 'sk-down-*', daily_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] },
    }
    let t = await startTestServer(config, upstream.url)
    try {
      for (let i = 0; i < 2; i++) {
        expect((await chat(t, KEY)).status).toBe(200)
        await eventually(() => callsOf(t, KEY).length === i + 1)
      }
      const sender = alertsOf(t.server.context).webhooks
      await eventually(() => sender.deliveries()[0]?.last_status === 500)
      const delivery = sender.deliveries()[0]
      t = await t.restart()
      // Dropped with the retry: not left "pending" as if it were still to be tried.
      expect(delivery.status).toBe('failed')
      expect(delivery.last_error).toMatch(/shut down/)
      await eventually(() => hook.got.length === 1, 10_000)
      expect(hook.got[0].body).toMatchObject({ type: 'budget.threshold', threshold_pct: 0.5, api_key_hash: hashKey(KEY) })
      await eventually(() => alertsOf(t.server.context).webhooks.deliveries()[0]?.status === 'delivered')
      // Once: another restart sends nothing again, nor does the next call.
      t = await t.restart()
      expect((await chat(t, KEY)).status).toBe(200)
      await eventually(() => callsOf(t, KEY).length === 3)
      // What the start or the call sends is made before a test alert sent now, and a webhook's
      // alerts go in turn: the test alert is the only one made, received after the first alone.
      const a = alertsOf(t.server.context)
      const [test] = await sendTestAlert(a)
      expect(test.status).toBe('delivered')
      expect(a.webhooks.deliveries().map((d) => d.type)).toEqual(['test'])
      expect(hook.got.map((g) => g.body.type)).toEqual(['budget.threshold', 'test'])
    } finally {
      await t.cleanup()
      await hook.close()
    }
  })
})
