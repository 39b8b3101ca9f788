import { afterEach, describe, expect, it, vi } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { getJson } from '../dashboard/seed'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import { claimCall } from './pg-claims'
import { receiver } from './support'

/**
 * A rolling window's crossing is kept in `budget_announced` for a window's length after it, so
 * that an instance started again reads it as announced (./postgres-window-restart.test.ts). The
 * same window crossed again (its spend fell under the threshold and rose over it) was kept with
 * the first crossing's end: the write did nothing when the row was there, so the record ended
 * a window's length after the first crossing, hours before the second's, and an instance with
 * a webhook started after that end took the window, still over the threshold, as never announced.
 */

const h = usePostgres()
const HOUR = 3600_000
afterEach(() => {
  vi.useRealTimers()
})

describe("a rolling window crossed again (PostgreSQL)", () => {
  it("is kept as announced for a window's length after the second crossing", async () => {
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true })
    const t0 = Date.now()
    const rule = { api_key_pattern: 'sk-wrex-*', window_hours: 5, window_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }
    const url = h.database()
    const a = await pgBudgetServer(h, url, { budgets: { rules: [rule] } })
    replayJson(h.upstream, NANO_FIXTURE)
    const key = 'sk-wrex-dddddddd-0001'
    // The only threshold announced here: the key's window's 50%.
    const until = async () => Number((await a.store.get<{ until: string | null }>('SELECT max(until) AS until FROM budget_announced'))?.until ?? 0)
    const spent = async () => (await getJson(`${a.url}/api/dashboard/budgets`)).body.rules.find((r: any) => r.api_key_hash === hashKey(key))?.windows[0].spent_usd ?? 0
    // A call, and an hour later another, which crosses the window's 50%: kept for five hours.
    expect((await claimCall(a, key)).status).toBe(200)
    await eventually(async () => (await spent()) > 0, 20_000)
    vi.setSystemTime(t0 + HOUR)
    expect((await claimCall(a, key)).status).toBe(200)
    await eventually(async () => (await until()) >= t0 + 6 * HOUR, 20_000)
    // Five hours and two minutes after the first call it has left the window (under 50%), and a
    // third call crosses it again.
    vi.setSystemTime(t0 + 5 * HOUR + 2 * 60_000)
    await eventually(async () => (await spent()) < NANO_COST * 1.5, 20_000)
    const t1 = Date.now()
    expect((await claimCall(a, key)).status).toBe(200)
    await eventually(async () => (await spent()) >= NANO_COST * 2 * (1 - 1e-9), 20_000)
    // Kept for five hours from the second crossing, not ended with the first's.
    await eventually(async () => (await until()) >= t1 + 5 * HOUR, 20_000)
    // A fourth call keeps the window over 50% once the second call has left it too, past the first
    // crossing's end: an instance with a webhook started then (none had sent it anywhere) reads the
    // window over 50% as announced, and sends it. With the first crossing's end, it took the
    // window as never announced, and sent nothing.
    expect((await claimCall(a, key)).status).toBe(200)
    await a.server.ledger.flushed()
    vi.setSystemTime(t0 + 6 * HOUR + 5 * 60_000)
    await eventually(async () => (await spent()) >= NANO_COST * 2 * (1 - 1e-9) && (await spent()) < NANO_COST * 2.5, 20_000)
    const hook = await receiver()
    h.onTeardown(() => hook.close())
    const b = await pgBudgetServer(h, url, { budgets: { rules: [rule] }, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }] } })
    await eventually(() => (budgetsOf(b.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
    await eventually(() => expect(hook.got.map((g) => [g.body.api_key_hash, g.body.threshold_pct])).toEqual([[hashKey(key), 0.5]]), 20_000)
  }, 120_000)
})
