import { describe, expect, it } from 'vitest'
import { keyHash, makeCall } from '../dashboard/seed'
import { request } from '../support/http'
import { serversAhead } from '../support/calls-ahead'
import { useFakeDate } from '../support/fake-date'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'

/**
 * A budget rule's daily, weekly and monthly meters with calls stamped ahead of the server's clock
 * (a team member's running fast, an agent's log imported from such a machine): they counted a call
 * stamped after midnight in today's spend (one of next week or month in this week's or month's),
 * where the summary and `report` count it in its own day, then dropped it when the period rolled
 * on, until a restart or a rule change. A call now counts in the day, week and month its stamp
 * falls in, as it is recorded, heard from another instance, or read at start-up, on SQLite and
 * PostgreSQL. The machine's clock is set as the budget tests set it (test/support/fake-date.ts: Date only).
 */
const h = usePostgres({ upstream: false })
const clock = useFakeDate()
const rig = serversAhead(h, record)

const KEY = keyHash('sk-ahead-meters-0001')
const T = (iso: string) => Date.parse(iso)
/** The clock when each test starts: 10 minutes before midnight. */
const START = '2026-03-14T23:50:00Z'
const RULE = { api_key_pattern: '*', daily_limit_usd: 100, weekly_limit_usd: 100, monthly_limit_usd: 100, action: 'warn' }
const CONFIG = { timezone: 'UTC', budgets: { week_start: 'monday', rules: [RULE] } }

/**
 * Saturday March 14th 2026: $1 today, $2 stamped 10 minutes after midnight (Sunday, the same
 * week), $8 on Monday (next week, the same month), $4 in next month's first minutes.
 */
function record(t: TestServer): Promise<boolean> {
  const call = (iso: string, cost: number, ahead = true) =>
    makeCall({ ts: T(iso), api_key_hash: KEY, cost_usd: cost, ...(ahead ? { source: 'import' as const, latency_ms: 0 } : {}) })
  t.server.ledger.record(call('2026-03-14T23:40:00Z', 1, false))
  t.server.ledger.record(call('2026-03-15T00:10:00Z', 2))
  t.server.ledger.record(call('2026-03-16T00:10:00Z', 8))
  t.server.ledger.record(call('2026-04-01T00:05:00Z', 4))
  return t.server.ledger.flushed()
}

type Spent = { daily: number; weekly: number; monthly: number }

async function spent(t: TestServer): Promise<Spent> {
  const r = await request(`${t.url}/api/dashboard/budgets`)
  expect(r.status).toBe(200)
  const rows = (r.json().rules as { api_key_hash: string | null; windows: { period: keyof Spent; spent_usd: number }[] }[]).filter((x) => x.api_key_hash === KEY)
  expect(rows).toHaveLength(1)
  return Object.fromEntries(rows[0].windows.map((w) => [w.period, w.spent_usd])) as Spent
}

async function expectSpent(servers: TestServer[], want: Spent): Promise<void> {
  for (const [i, t] of servers.entries()) expect(await spent(t), `server ${i} at ${new Date().toISOString()}`).toEqual(want)
}

/** Each period's spend is its calls, those stamped ahead included, as the periods roll on. */
async function onwards(servers: TestServer[]): Promise<void> {
  await expectSpent(servers, { daily: 1, weekly: 3, monthly: 11 })
  clock.set('2026-03-15T00:00:01Z')
  await expectSpent(servers, { daily: 2, weekly: 3, monthly: 11 })
  clock.set('2026-03-16T00:00:01Z')
  await expectSpent(servers, { daily: 8, weekly: 8, monthly: 11 })
  clock.set('2026-04-01T00:00:01Z')
  await expectSpent(servers, { daily: 4, weekly: 4, monthly: 4 })
}

describe("calls stamped ahead of the clock in a rule's meters", () => {
  it('on SQLite: count in their own day, week and month as recorded', async () => {
    clock.start(START)
    await onwards(await rig.recorded(CONFIG))
  }, 60_000)

  it('on SQLite: the same as read at start-up', async () => {
    clock.start(START)
    await rig.readAtStart(CONFIG, onwards)
  }, 60_000)

  it('on PostgreSQL: the same as recorded, heard from another instance, and read at start-up', async () => {
    clock.start(START)
    await onwards(await rig.shared(CONFIG))
  }, 90_000)
})
