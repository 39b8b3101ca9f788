import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { getJson } from '../dashboard/seed'
import { postJson } from '../support/http'
import { holdLock, lockWaiters, until, usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { receiver } from './support'

/**
 * PostgreSQL: a rule change (here, the shared rules' first read at a start, too) rebuilds the
 * meters from the calls the last read found, then reads them again. A call this instance made
 * after that last read was left out of the rebuilt meters until the new read ended: the next call
 * crossed a threshold with it unannounced (counted under it), and the new read, whose snapshot
 * held the first call and missed the second, took the crossing as announced. The 50% alert was
 * never sent (the instance's 50% of test/alerts/postgres-close-under-way.test.ts, 1 run in 5 under
 * load). The read is held here, after its snapshot, until the second call is made.
 */

const h = usePostgres()
const BODY = { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }] }
const budgets = { rules: [{ api_key_pattern: 'sk-slow-*', daily_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] }

describe('a threshold crossed while a rule change reads the meters again (PostgreSQL)', () => {
  it('is announced once, by the call that crossed it', async () => {
    const hook = await receiver()
    h.onTeardown(() => hook.close())
    const url = h.database()
    const config = { ...ADMIN_CONFIG, budgets, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 20 } }
    const b = await pgBudgetServer(h, url, config)
    replayJson(h.upstream, NANO_FIXTURE)
    const feed = budgetsOf(b.server.context).feed!
    await until('the feed listens and the meters are read', () => feed.status().listening && feed.stats.reloads > 0)
    const key = 'sk-slow-eeeeeeee-0005'
    const call = async () => expect((await postJson(`${b.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })).status).toBe(200)

    // The first call, stored after the last read.
    await call()
    expect(await b.server.ledger.flushed()).toBe(true)
    // A rule added: the meters rebuilt, then read again; that read held after its snapshot (the
    // thresholds announced, read beside the calls, wait on a lock).
    const reloads = feed.stats.reloads
    const held = await holdLock(b.store, 'LOCK TABLE budget_announced IN ACCESS EXCLUSIVE MODE')
    expect((await admin(b.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-other-*', daily_limit_usd: 5, action: 'warn' } })).status).toBe(201)
    await lockWaiters(b.store, 1)
    await until('the calls are read', async () => {
      const busy = await b.store.all("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND state <> 'idle' AND pid <> pg_backend_pid() AND wait_event_type IS DISTINCT FROM 'Lock'")
      return busy.length === 1 // the lock's own holder
    })
    // The second call crosses 50%; then the read ends.
    await call()
    await held.release()
    await until('the read is done', () => feed.stats.reloads > reloads)
    const sent = () => hook.got.map((g) => g.body).filter((g) => g.api_key_hash === hashKey(key)).map((g) => g.threshold_pct)
    await until('the 50% alert is sent', () => sent().length > 0, 20_000)
    // Once, and the meter holds the two calls once each.
    const budgetsNow = (await getJson(`${b.url}/api/dashboard/budgets`)).body
    const daily = budgetsNow.rules.find((r: any) => r.api_key_hash === hashKey(key)).windows.find((w: any) => w.period === 'daily')
    expect({ sent: sent(), spent: daily.spent_usd }).toEqual({ sent: [0.5], spent: expect.closeTo(NANO_COST * 2, 12) })
  }, 90_000)
})
