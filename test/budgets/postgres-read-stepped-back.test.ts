import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { untilStartReadsDone } from '../support/calls-feed'
import { useFakeDate } from '../support/fake-date'
import { fixture } from '../support/fixtures'
import { request } from '../support/http'
import { holdLock, lockWaiters, until, usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'
import { NANO_COST, NANO_FIXTURE, chat } from './support'

/**
 * On PostgreSQL an instance reads every instance's spend again with its meters (a rule change, a
 * reconnection): today's and this month's, for the tray, the budgets API's `overall` and the admin
 * API's key spend. A period never goes back (README: Budgets, Periods), across such a re-read too: a
 * call at 00:00:05 rolled the totals into April 1st; the wall clock is then stepped back to
 * 23:59:58 (NTP) and the meters read again. The re-read asked for March 31st and March, with the
 * April call in them (the spend query has no upper bound), and kept the totals there: once the
 * clock was past midnight again they rolled into April 1st at $0, the April call's spend lost
 * from `overall`, the tray and the key's spend (the admin API's) until the next re-read. So did
 * the key registry's month (the admin API's keys and requests_month), read for the month the spend
 * totals were in: a key whose April began with a refusal (at $0: the totals stayed in March 31st)
 * was counted in March, and past midnight again was listed no more. And a read begun before
 * midnight whose calls were read before B's and A's, ending once the clock was stepped back, took
 * the totals, the key registry and the meters back to March 31st and March (A's call held for a
 * day not begun, B's counted as the day's spend): the budgets API's answer, the tray and the admin
 * API's keys showed the ended day until the clock was past midnight again.
 * The machine's clock is set as the budget tests set it (test/support/fake-date.ts: Date only).
 */
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture(NANO_FIXTURE) }) })
const clock = useFakeDate()

/**
 * A rule change, which reads the meters (and the spend) again, and that read done: awaited through
 * the feed, whose reload runs once more after any read under way (one begun before the clock was
 * stepped back, whose end alone would not do).
 */
async function readAgain(t: TestServer): Promise<void> {
  expect((await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-other-*', daily_limit_usd: 5, action: 'warn' } })).status).toBe(201)
  await budgetsOf(t.server.context).feed!.reload()
}

type KeyRow = { api_key_hash: string; requests_month: number }

/** The admin API's keys this month, with their requests. */
async function keys(t: TestServer): Promise<[string, number][]> {
  const r = await admin(t.url, 'GET', '/api-keys')
  expect(r.status).toBe(200)
  return (r.json() as KeyRow[]).map((k) => [k.api_key_hash, k.requests_month])
}

type Status = { api_key_hash: string | null; windows: { period: string; spent_usd: number; resets_at: string }[] }

type Overall = { period: string; spent_usd: number; resets_at: string }

async function overall(t: TestServer): Promise<Overall[]> {
  const r = await request(`${t.url}/api/dashboard/budgets`)
  expect(r.status).toBe(200)
  return r.json().overall
}

describe("the spend totals read again from PostgreSQL while the clock is stepped back across midnight", () => {
  it('stay in the day and month they had rolled into', async () => {
    const A = 'sk-pgstep-aaaaaaaaaaaa-0001'
    const B = 'sk-pgstep-bbbbbbbbbbbb-0002'
    clock.start('2026-03-31T23:50:00Z')
    const t = await h.server({ config: { ...ADMIN_CONFIG, timezone: 'UTC' } })
    // No read of start-up's left to run once the clock is set on: it would read the spend and keys
    // in April 1st and hide what the test looks at.
    await untilStartReadsDone(t)
    const spend = t.server.context.ledger.spend
    // B calls on March 31st, A just after midnight: the totals roll into April 1st.
    expect((await chat(t, B)).status).toBe(200)
    clock.set('2026-04-01T00:00:05Z')
    expect((await chat(t, A)).status).toBe(200)
    expect(spend.totals()).toEqual({ day: NANO_COST, month: NANO_COST })
    expect(await t.server.context.ledger.flushed()).toBe(true)

    // The clock stepped back; a rule change reads the meters (and the spend) again meanwhile.
    clock.set('2026-03-31T23:59:58Z')
    await readAgain(t)

    // Still April 1st: A's call is the day's and the month's spend, B's is neither.
    expect(await overall(t)).toMatchObject([
      { period: 'daily', spent_usd: NANO_COST, resets_at: '2026-04-02T00:00:00.000Z' },
      { period: 'monthly', spent_usd: NANO_COST, resets_at: '2026-05-01T00:00:00.000Z' },
    ])
    expect(spend.key(hashKey(A))).toEqual({ day: NANO_COST, month: NANO_COST })
    expect(spend.key(hashKey(B))).toEqual({ day: 0, month: 0 })
    // Past midnight again: A's call still counted (the tray's totals, the key's spend).
    clock.set('2026-04-01T00:00:06Z')
    expect(spend.totals()).toEqual({ day: NANO_COST, month: NANO_COST })
    expect(spend.key(hashKey(A))).toEqual({ day: NANO_COST, month: NANO_COST })
    expect((await overall(t)).map((o) => o.spent_usd)).toEqual([NANO_COST, NANO_COST])
  }, 60_000)

  it('stay in the day and month they had rolled into, through a read begun before midnight that ends once the clock is stepped back', async () => {
    const A = 'sk-pgspan-aaaaaaaaaaaa-0001'
    const B = 'sk-pgspan-bbbbbbbbbbbb-0002'
    clock.start('2026-03-31T23:50:00Z')
    const url = h.database()
    const rules = [{ api_key_pattern: 'sk-pgspan-*', daily_limit_usd: NANO_COST * 10, action: 'block' }]
    const t = await h.server({ url, config: { ...ADMIN_CONFIG, timezone: 'UTC', budgets: { rules } } })
    await untilStartReadsDone(t)
    const spend = t.server.context.ledger.spend
    // A read of the meters held after its calls are read, in March 31st (the thresholds announced,
    // read beside them, wait on a lock): B's call and A's just after midnight are not in them.
    const store = h.store(url)
    const held = await holdLock(store, 'LOCK TABLE budget_announced IN ACCESS EXCLUSIVE MODE')
    const reading = budgetsOf(t.server.context).feed!.reload()
    await lockWaiters(store, 1)
    await until('the calls are read', async () => {
      const busy = await store.all("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND state <> 'idle' AND pid <> pg_backend_pid() AND wait_event_type IS DISTINCT FROM 'Lock'")
      return busy.length === 1 // the lock's own holder
    })
    expect((await chat(t, B)).status).toBe(200)
    clock.set('2026-04-01T00:00:05Z')
    expect((await chat(t, A)).status).toBe(200)
    expect(await t.server.context.ledger.flushed()).toBe(true)
    // The clock stepped back; the read ends.
    clock.set('2026-03-31T23:59:58Z')
    await held.release()
    await reading

    // Still April 1st: A's call is the day's and the month's spend, B's is neither; the budgets
    // answer's windows are April 1st's.
    expect(spend.totals()).toEqual({ day: NANO_COST, month: NANO_COST })
    expect(spend.key(hashKey(A))).toEqual({ day: NANO_COST, month: NANO_COST })
    expect(spend.key(hashKey(B))).toEqual({ day: 0, month: 0 })
    expect(await keys(t)).toEqual([[hashKey(A), 1]])
    const r = await request(`${t.url}/api/dashboard/budgets`)
    const daily = (hash: string) => (r.json().rules as Status[]).find((x) => x.api_key_hash === hash)!.windows[0]
    expect(daily(hashKey(A))).toMatchObject({ spent_usd: NANO_COST, resets_at: '2026-04-02T00:00:00.000Z' })
    expect(daily(hashKey(B))).toMatchObject({ spent_usd: 0, resets_at: '2026-04-02T00:00:00.000Z' })
    expect(r.json().overall).toMatchObject([
      { period: 'daily', spent_usd: NANO_COST, resets_at: '2026-04-02T00:00:00.000Z' },
      { period: 'monthly', spent_usd: NANO_COST, resets_at: '2026-05-01T00:00:00.000Z' },
    ])
  }, 60_000)

  it("keep a key's requests in the month the key registry had rolled into, its first call of it free", async () => {
    // The spend totals did not roll (a refused call is recorded at $0), the key registry did.
    const A = 'sk-pgzero-aaaaaaaaaaaa-0001'
    const B = 'sk-pgkeys-bbbbbbbbbbbb-0002'
    clock.start('2026-03-31T23:50:00Z')
    const rules = [{ api_key_pattern: 'sk-pgzero-*', daily_limit_usd: 0, action: 'block' }]
    const t = await h.server({ config: { ...ADMIN_CONFIG, timezone: 'UTC', budgets: { rules } } })
    await untilStartReadsDone(t)
    expect((await chat(t, B)).status).toBe(200)
    clock.set('2026-04-01T00:00:05Z')
    expect((await chat(t, A)).status).toBe(429)
    await until("A's refusal counted", async () => JSON.stringify(await keys(t)) === JSON.stringify([[hashKey(A), 1]]))
    expect(await t.server.context.ledger.flushed()).toBe(true)

    clock.set('2026-03-31T23:59:58Z')
    await readAgain(t)

    // April's: A's one request; B's March call none of it.
    expect(await keys(t)).toEqual([[hashKey(A), 1]])
    clock.set('2026-04-01T00:00:06Z')
    expect(await keys(t)).toEqual([[hashKey(A), 1]])
  }, 60_000)
})
