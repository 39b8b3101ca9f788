import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import type { TestServer } from '../support/server'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { getJson, makeCall } from '../dashboard/seed'
import { postJson } from '../support/http'
import { holdLock, lockWaiters, until, usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { receiver } from './support'

/**
 * PostgreSQL: a rule change rebuilds the meters from the calls the last read found (with this
 * instance's own calls since: test/alerts/postgres-rule-change-crossing.test.ts), then reads them
 * again. What the meters counted since that last read besides its own calls, another instance's
 * calls heard on the calls feed and every re-price (this instance's or another's), was left out
 * of the rebuilt meters until the new read ended: the budgets API showed the key's spend without
 * it, and a call meanwhile crossed a threshold with it uncounted, then the new read took the
 * crossing as announced. The 50% alert was never sent. The read is held here, after its
 * snapshot, until the crossing call is made.
 */

const h = usePostgres()
const BODY = { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }] }
const MODEL = 'house-model-since-read'
const budgets = { rules: [{ api_key_pattern: '*', daily_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] }

/** Spend of 1.5 calls' worth for `key` counted in `a`'s meters after its last read, by `by` (a re-price, or another instance's call). */
type Spend = (a: TestServer, b: TestServer, key: string) => Promise<void>

/** An unpriced call of MODEL recorded through `at`, then MODEL priced and re-priced through `through`: 1.5 calls' worth. */
const repriced = (at: 'a' | 'b', through: 'a' | 'b'): Spend => async (a, b, key) => {
  const s = { a, b }
  // A model of the key's own: a second try (below) re-prices only its own call.
  const model = `${MODEL}-${key.slice(-8)}`
  s[at].server.ledger.record(makeCall({ api_key_hash: hashKey(key), model, priced: false, cost_usd: 0, input_tokens: 1_000_000, output_tokens: 0 }))
  expect(await s[at].server.ledger.flushed()).toBe(true)
  expect((await admin(s[through].url, 'PUT', `/prices/openai/${model}`, { body: { input_mtok: NANO_COST * 1.5, output_mtok: 0 } })).status).toBe(200)
  expect((await admin(s[through].url, 'POST', `/prices/openai/${model}/reprice`)).json()).toMatchObject({ repriced: 1 })
}

const CASES: [string, Spend][] = [
  ['a re-price through the other instance', repriced('b', 'b')],
  ['a re-price through this instance', repriced('a', 'a')],
  ["another instance's call", async (_a, b, key) => {
    b.server.ledger.record(makeCall({ api_key_hash: hashKey(key), model: 'gpt-5-nano', cost_usd: NANO_COST * 1.5 }))
    expect(await b.server.ledger.flushed()).toBe(true)
  }],
]

describe('what the meters counted since their last read, when a rule change reads them again (PostgreSQL)', () => {
  it.each(CASES)('%s: is in the rebuilt meters, and the threshold a call then crosses is announced', async (_name, spend) => {
    const hook = await receiver()
    h.onTeardown(() => hook.close())
    const url = h.database()
    const config = { ...ADMIN_CONFIG, timezone: 'UTC', budgets }
    // B first: A's start finds the budget clock B shared (no read of A's meters when B shares it).
    const b = await h.server({ url, config })
    const a = await pgBudgetServer(h, url, { ...config, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 20 } })
    replayJson(h.upstream, NANO_FIXTURE)
    const feed = budgetsOf(a.server.context).feed!
    for (const t of [a, b]) {
      const f = budgetsOf(t.server.context).feed!
      // Read at its start, and again once the shared rules are first read.
      await until('the feed listens and the meters are read', () => f.status().listening && f.stats.reloads >= 2)
    }
    let key = ''
    const spent = async () => {
      const body = (await getJson(`${a.url}/api/dashboard/budgets`)).body
      return body.rules.find((r: any) => r.api_key_hash === hashKey(key))?.windows.find((w: any) => w.period === 'daily').spent_usd ?? 0
    }

    // 1.5 calls' worth, after A's last read (under 50%: nothing announced). A start's reads asked
    // at once run as one more (feed/listen.ts reload), so a third may still come after the two
    // waited for: then the spend is in what it read, not counted since, and is made again under
    // a new key.
    let reloads = -1
    for (let tries = 0; tries < 3 && reloads !== feed.stats.reloads; tries++) {
      key = `sk-since-read-${Math.random().toString(36).slice(2, 10)}`
      reloads = feed.stats.reloads
      await spend(a, b, key)
      await until("A's meters count it", async () => Math.abs((await spent()) - NANO_COST * 1.5) < 1e-12)
    }
    expect(feed.stats.reloads).toBe(reloads)

    // A rule added through A: its meters rebuilt, then read again; that read held after its snapshot.
    const held = await holdLock(a.store, 'LOCK TABLE budget_announced IN ACCESS EXCLUSIVE MODE')
    expect((await admin(a.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-other-*', daily_limit_usd: 5, action: 'warn' } })).status).toBe(201)
    await lockWaiters(a.store, 1)
    await until('the calls are read', async () => {
      const busy = await a.store.all("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND state <> 'idle' AND pid <> pg_backend_pid() AND wait_event_type IS DISTINCT FROM 'Lock'")
      return busy.length === 1 // the lock's own holder
    })
    // The rebuilt meters still hold it.
    const during = await spent()
    // A call through A crosses 50%; then the read ends.
    expect((await postJson(`${a.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })).status).toBe(200)
    await held.release()
    await until('the read is done', () => feed.stats.reloads > reloads)
    const sent = () => hook.got.map((g) => g.body).filter((g) => g.api_key_hash === hashKey(key)).map((g) => g.threshold_pct)
    await until('the spend is read', async () => Math.abs((await spent()) - NANO_COST * 2.5) < 1e-12)
    await until('the 50% alert is sent', () => sent().length > 0, 20_000).catch(() => {})
    expect({ during, sent: sent() }).toEqual({ during: expect.closeTo(NANO_COST * 1.5, 12), sent: [0.5] })
  }, 90_000)

  it('a re-price down of a call the last read held: the rebuilt meters hold its new cost', async () => {
    const url = h.database()
    const config = { ...ADMIN_CONFIG, timezone: 'UTC', budgets: { rules: [{ api_key_pattern: '*', daily_limit_usd: 1, action: 'warn' }] } }
    const b = await h.server({ url, config })
    const key = 'sk-since-read-down'
    const model = `${MODEL}-down`
    // A call at 3 calls' worth, stored before A starts (its start reads it).
    b.server.ledger.record(makeCall({ api_key_hash: hashKey(key), model, cost_usd: NANO_COST * 3, input_tokens: 1_000_000, output_tokens: 0 }))
    expect(await b.server.ledger.flushed()).toBe(true)
    const a = await pgBudgetServer(h, url, config)
    const feed = budgetsOf(a.server.context).feed!
    await until('the meters are read', () => feed.status().listening && feed.stats.reloads >= 2)
    const spent = async () => {
      const body = (await getJson(`${a.url}/api/dashboard/budgets`)).body
      return body.rules.find((r: any) => r.api_key_hash === hashKey(key))?.windows.find((w: any) => w.period === 'daily').spent_usd ?? 0
    }
    expect(await spent()).toBeCloseTo(NANO_COST * 3, 12)

    // Re-priced through B at one call's worth: A's meters move down by two.
    const reloads = feed.stats.reloads
    expect((await admin(b.url, 'PUT', `/prices/openai/${model}`, { body: { input_mtok: NANO_COST, output_mtok: 0 } })).status).toBe(200)
    expect((await admin(b.url, 'POST', `/prices/openai/${model}/reprice?all=true`)).json()).toMatchObject({ repriced: 1 })
    await until("A's meters moved", async () => Math.abs((await spent()) - NANO_COST) < 1e-12)
    expect(feed.stats.reloads).toBe(reloads)

    const held = await holdLock(a.store, 'LOCK TABLE budget_announced IN ACCESS EXCLUSIVE MODE')
    expect((await admin(a.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-other-*', daily_limit_usd: 5, action: 'warn' } })).status).toBe(201)
    await lockWaiters(a.store, 1)
    const during = await spent()
    await held.release()
    await until('the read is done', () => feed.stats.reloads > reloads)
    expect({ during, after: await spent() }).toEqual({ during: expect.closeTo(NANO_COST, 12), after: expect.closeTo(NANO_COST, 12) })
  }, 90_000)
})
