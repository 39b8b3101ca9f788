import { describe, expect, it } from 'vitest'
import { alertsOf } from '../../src/main/alerts'
import { budgetsOf } from '../../src/main/budgets'
import type { Delivery } from '../../src/main/alerts/webhooks'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually } from '../support/http'
import { until, usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { claimCall, claimHook } from './pg-claims'

/**
 * On PostgreSQL the claims of alerts not sent by shutdown are let go then, for the next instance to
 * send (./postgres-close-under-way.test.ts: an attempt under way that the webhook refuses with a
 * status). An attempt under way at shutdown that fails before any connection is made (connection
 * refused: a webhook restarting, no such host) sent nothing either, and no retry follows it: its
 * claim was settled as if the webhook might have taken it, and no instance ever sent the alert.
 */

const h = usePostgres()
const budgets = { rules: [{ api_key_pattern: 'sk-claim-*', daily_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] }

describe('an alert whose attempt under way at shutdown is refused a connection (PostgreSQL)', () => {
  it('lets its claim go, and the instance started again sends it', async () => {
    // A port nothing listens on while the first instance runs: every connection is refused.
    const first = await claimHook()
    const port = Number(new URL(first.url).port)
    await first.close()
    const config = { budgets, alerts: { webhooks: [{ url: first.url, format: 'json' }], backoff_ms: 20, timeout_ms: 60_000 } }
    const url = h.database()
    const a = await pgBudgetServer(h, url, config)
    replayJson(h.upstream, NANO_FIXTURE)
    // The sender closes (as at shutdown) the moment the alert's first attempt is under way, before
    // its connection is refused; the shutdown's own close gets that same close's answer.
    const sender = alertsOf(a.server.context).webhooks
    const close = sender.close.bind(sender)
    let closing: Promise<Delivery[]> | null = null
    sender.close = () => (closing ??= close())
    const send = sender.send.bind(sender)
    sender.send = (...args) => {
      const sent = send(...args)
      void sender.close()
      return sent
    }
    const key = 'sk-claim-refused-0001'
    for (let i = 0; i < 2; i++) expect((await claimCall(a, key)).status).toBe(200)
    await until('the alert was claimed and its attempt refused a connection', () => sender.deliveries().some((d) => d.status === 'failed' && /ECONNREFUSED/.test(d.last_error ?? '')), 20_000)
    expect(sender.deliveries().filter((d) => d.type === 'budget.threshold')).toHaveLength(1)
    await a.stop()
    // Nothing reached the webhook: the claim is let go, not settled as sent.
    expect(await a.store.all('SELECT owner FROM alert_claims')).toEqual([])
    const hook = await claimHook(true, port)
    h.onTeardown(() => hook.close())
    const b = await pgBudgetServer(h, url, config, a.dir)
    await eventually(() => (budgetsOf(b.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
    await eventually(() => expect(hook.got.filter((g) => g.api_key_hash === hashKey(key)).map((g) => g.threshold_pct)).toEqual([0.5]), 20_000)
  }, 90_000)
})
