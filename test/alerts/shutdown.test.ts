import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { testPayload } from '../../src/main/alerts/payload'
import { CLOSE_WAIT_MS, WebhookSender } from '../../src/main/alerts/webhooks'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { eventually } from '../support/http'
import { startTestServer } from '../support/server'
import { hangingReceiver } from './support'

let hook: Awaited<ReturnType<typeof hangingReceiver>>

beforeAll(async () => {
  hook = await hangingReceiver()
})
afterAll(async () => {
  await hook.close()
})

/** README: Alerts → Webhooks (at shutdown). */
describe('a webhook that never answers, at shutdown', () => {
  it('holds the exit for CLOSE_WAIT_MS at most, not for alerts.timeout_ms', async () => {
    const t = await startTestServer({ ...ADMIN_CONFIG, alerts: { webhooks: [{ url: `${hook.url}/services/T0/B0/X` }], timeout_ms: 60_000 } })
    // The test alert's answer waits for the first attempt, which the receiver never ends.
    const answer = admin(t.url, 'POST', '/alerts/test').catch(() => null)
    await eventually(() => hook.posts() === 1)
    const started = Date.now()
    await t.cleanup()
    // Before, the exit waited for alerts.timeout_ms (60 s here); the margin is for a busy machine.
    expect(Date.now() - started).toBeLessThan(CLOSE_WAIT_MS + 10_000)
    await answer
  }, 90_000)

  it('the attempt cut at shutdown is logged as failed, and not retried', async () => {
    const w = new WebhookSender([{ url: `${hook.url}/hook`, format: 'json' }], { retries: 5, backoffMs: 10, timeoutMs: 15_000 })
    const before = hook.posts()
    const [d] = w.send(testPayload('test_shutdown', Date.now()))
    await eventually(() => hook.posts() === before + 1)
    await w.close()
    expect(w.deliveries()[0]).toMatchObject({ id: d.id, status: 'failed', attempts: 1, last_error: 'Burnrate shut down before the webhook answered' })
  }, 30_000)
})
