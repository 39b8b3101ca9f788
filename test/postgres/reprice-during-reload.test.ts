import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { getJson, keyHash, makeCall } from '../dashboard/seed'
import { holdLock, lockWaiters, until, usePostgres } from '../support/pg-harness'

/**
 * PostgreSQL: an instance's own cost moves (a re-price, a background job's result) committed
 * while it reads its meters again (a rule changed, another instance's re-price too large to
 * send, the feed reconnected) are in its meters and today's spend once that read is done. The
 * read rebuilds them from a snapshot taken before the move committed, and the move had been
 * added to the meters the read then replaced: the instance's spend and budgets went on without
 * the re-price ($0 where $30 had been re-priced) until its next read, while the calls, the
 * dashboard's rollups and the other instances had it. (The instance's own new calls were already
 * counted again after such a read; its moves were not.)
 */
const h = usePostgres({ upstream: false })
const MODEL = 'my-house-model'
const KEY = 'sk-reload-aaaaaaaaaaaa'

describe("a re-price committed while the instance's meters are read again", () => {
  it('is in its meters and today\'s spend once the read is done', async () => {
    const url = h.database()
    const config = { ...ADMIN_CONFIG, timezone: 'UTC', budgets: { rules: [{ api_key_pattern: '*', daily_limit_usd: 1000, action: 'warn' }] } }
    const a = await h.server({ url, config, upstream: null })
    const b = await h.server({ url, config, upstream: null })
    for (const t of [a, b]) {
      const feed = budgetsOf(t.server.context).feed!
      await until('the feed listens', () => feed.status().listening && feed.stats.reloads > 0)
    }
    const store = h.store(url)
    const now = Date.now()
    // Ten unpriced calls of a million input tokens: $3 each at $3 per million.
    for (let i = 0; i < 10; i++) {
      a.server.ledger.record(makeCall({ ts: now - 10_000 + i, api_key_hash: keyHash(KEY), model: MODEL, priced: false, cost_usd: 0, input_tokens: 1_000_000, output_tokens: 0 }))
    }
    expect(await a.server.ledger.flushed()).toBe(true)
    expect((await admin(a.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 3, output_mtok: 3 } })).status).toBe(200)

    // A's next read of its meters held after its snapshot: the thresholds announced (read beside
    // the calls) wait on a lock. A rule added through A makes it read.
    const feedA = budgetsOf(a.server.context).feed!
    const reloads = feedA.stats.reloads
    const held = await holdLock(store, 'LOCK TABLE budget_announced IN ACCESS EXCLUSIVE MODE')
    expect((await admin(a.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-other-*', daily_limit_usd: 5, action: 'warn' } })).status).toBeLessThan(300)
    await lockWaiters(store, 1)
    // Its calls read (that transaction over): only the wait on the lock is left of the read.
    await until('the calls are read', async () => {
      const busy = await store.all("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND state <> 'idle' AND pid <> pg_backend_pid() AND wait_event_type IS DISTINCT FROM 'Lock'")
      return busy.length === 1 // the lock's own holder
    })

    // The re-price commits through A meanwhile, then the read ends.
    expect((await admin(a.url, 'POST', `/prices/openai/${MODEL}/reprice`)).json()).toMatchObject({ repriced: 10 })
    await held.release()
    await until("A's read is done", () => feedA.stats.reloads > reloads)

    const stored = (await store.get<{ c: number }>('SELECT sum(cost_usd)::float8 AS c FROM calls'))!.c
    expect(stored).toBeCloseTo(30, 9)
    for (const t of [b, a]) {
      const summary = (await getJson(`${t.url}/api/dashboard/summary`)).body
      const budgets = (await getJson(`${t.url}/api/dashboard/budgets`)).body
      const daily = budgets.rules.find((r: any) => r.api_key_hash === keyHash(KEY)).windows.find((w: any) => w.period === 'daily')
      // Today's spend per key (the tray, burnrate_spend_usd) and the rule's meter, as the calls say.
      const key = t.server.ledger.spend.key(keyHash(KEY)).day
      expect({ today: summary.today_spend_usd, key, meter: daily.spent_usd }).toEqual({ today: expect.closeTo(stored, 9), key: expect.closeTo(stored, 9), meter: expect.closeTo(stored, 9) })
    }
  })
})
