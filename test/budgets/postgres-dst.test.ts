import { describe, expect, it } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../src/shared/api'
import { Meter } from '../../src/main/budgets/meter'
import type { Rule } from '../../src/main/budgets/rules'
import { spendCounter } from '../../src/main/budgets/state/pg/call-spend'
import { Limiter } from '../../src/main/budgets/state/pg/limiter'
import { SpendRows } from '../../src/main/budgets/state/pg/spend-rows'
import { ruleKey } from '../../src/main/budgets/state/pg/sql'
import { insertCalls } from '../../src/main/ledger/pg/insert'
import { hashKey } from '../../src/main/proxy/attribution'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { PeriodClock } from '../../src/main/time/zone'
import { makeCall } from '../dashboard/seed'
import { usePostgres } from '../support/pg-harness'

const h = usePostgres({ upstream: false })

/**
 * PostgreSQL spend rows on a day whose midnight does not exist: the rows a meter creates for a
 * call (admission) and the rows a stored call counts in (addCallsToSpend) have the same
 * `period_start`, the day's true first instant (01:00 in Santiago on 2026-09-06).
 */
describe('PostgreSQL spend rows at a DST change', () => {
  it("a call's daily, weekly and monthly rows are the meter's, in Santiago around its skipped midnight", async () => {
    const store = h.store(h.database())
    await migratePostgres(store)
    const zone = { timezone: 'America/Santiago', budgets: { week_start: 'sunday' as const } }
    const clock = new PeriodClock(zone.timezone, 0)
    const key = 'sk-dst-aaaaaaaa-0001'
    const rule = { ...DEFAULT_RULE_OPTIONS, api_key_pattern: '*', daily_limit_usd: 10, weekly_limit_usd: 10, monthly_limit_usd: 10, action: 'block', source: 'config', created_at: null } as Rule
    const rows = new SpendRows(store, new Limiter(2))
    const times = [Date.parse('2026-09-06T03:30:00Z'), Date.parse('2026-09-06T04:30:00Z')] // Saturday 23:30 (-04), Sunday 01:30 (-03)
    for (const ts of times) {
      const periods = new Meter(rule, clock).periods(ts, '').filter((p) => p.period !== 'session')
      await rows.ensure(ruleKey(rule), { rule, meter: new Meter(rule, clock), keyHash: hashKey(key), session: '', ts, periods, amount: 0 }, periods)
    }
    const calls = times.map((ts, i) => ({ ...makeCall({ ts, cost_usd: i + 1, api_key_hash: hashKey(key) }), call_key: `dst-${i}` }))
    await store.transaction(async (tx) => spendCounter(zone)(tx, await insertCalls(tx, calls)))

    const got = await store.all<{ period: string; period_start: number; spent_usd: number }>(
      `SELECT period, period_start, spent_usd FROM budget_spend WHERE api_key_hash = @k AND period IN ('daily', 'weekly', 'monthly') ORDER BY period, period_start`,
      { k: hashKey(key) },
    )
    const iso = (t: number) => new Date(Number(t)).toISOString()
    expect(got.map((r) => [r.period, iso(r.period_start), r.spent_usd])).toEqual([
      ['daily', '2026-09-05T04:00:00.000Z', 1],
      ['daily', '2026-09-06T04:00:00.000Z', 2], // Sunday begins at 01:00 (-03)
      ['monthly', '2026-09-01T04:00:00.000Z', 3],
      ['weekly', '2026-08-30T04:00:00.000Z', 1],
      ['weekly', '2026-09-06T04:00:00.000Z', 2], // week_start sunday: the week begins at 01:00 too
    ])
  }, 120_000)
})
