import { describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { keyHash, makeCall } from '../dashboard/seed'
import { request } from '../support/http'
import { serversAhead } from '../support/calls-ahead'
import { useFakeDate } from '../support/fake-date'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'

/**
 * The in-memory spend (the admin API's spend_today_usd, /api/dashboard/budgets' overall, the tray)
 * with calls stamped ahead of the server's clock (a team member's running fast, an agent's log
 * imported from such a machine): it counted a call stamped after midnight in today's spend (and one
 * of next month in this month's), where the summary counts it in its own day, then dropped it at
 * midnight, until a restart. A call now counts in the day and month its stamp falls in, as it is
 * recorded, heard from another instance, or read at start-up, on SQLite and PostgreSQL.
 * The machine's clock is set as the budget tests set it (test/support/fake-date.ts: Date only).
 */
const h = usePostgres({ upstream: false })
const clock = useFakeDate()
const rig = serversAhead(h, record)

const KEY = keyHash('sk-ahead-midnight-0001')
const T = (iso: string) => Date.parse(iso)
/** The clock when each test starts: 10 minutes before midnight. */
const START = '2026-03-14T23:50:00Z'
const CONFIG = { ...ADMIN_CONFIG, timezone: 'UTC' }

/** $1 today, $2 stamped 10 minutes after midnight (the same month), $4 stamped in next month. */
function record(t: TestServer): Promise<boolean> {
  t.server.ledger.record(makeCall({ ts: T('2026-03-14T23:40:00Z'), api_key_hash: KEY, cost_usd: 1 }))
  t.server.ledger.record(makeCall({ ts: T('2026-03-15T00:10:00Z'), api_key_hash: KEY, cost_usd: 2, source: 'import', latency_ms: 0 }))
  t.server.ledger.record(makeCall({ ts: T('2026-04-01T00:05:00Z'), api_key_hash: KEY, cost_usd: 4, source: 'import', latency_ms: 0 }))
  return t.server.ledger.flushed()
}

type Spend = { day: number; month: number }

/** The in-memory spend as the budgets answer's overall and the tray read it. */
async function overall(t: TestServer): Promise<Spend> {
  const r = await request(`${t.url}/api/dashboard/budgets`)
  expect(r.status).toBe(200)
  const o = r.json().overall as { period: string; spent_usd: number }[]
  return { day: o.find((x) => x.period === 'daily')!.spent_usd, month: o.find((x) => x.period === 'monthly')!.spent_usd }
}

/** The key's spend as the admin API lists it. */
async function listed(t: TestServer): Promise<Spend> {
  const r = await admin(t.url, 'GET', '/api-keys')
  expect(r.status).toBe(200)
  const row = (r.json() as { api_key_hash: string; spend_today_usd: number; spend_month_usd: number }[]).find((k) => k.api_key_hash === KEY)
  return row ? { day: row.spend_today_usd, month: row.spend_month_usd } : { day: 0, month: 0 }
}

/** The summary's today and month (every call in the day and month its stamp falls in). */
async function summary(t: TestServer): Promise<Spend> {
  const s = (await request(`${t.url}/api/dashboard/summary`)).json()
  return { day: s.today_spend_usd, month: s.month_spend_usd }
}

/** Each server's in-memory spend is `want`, as the summary counts it. */
async function expectSpend(servers: TestServer[], want: Spend): Promise<void> {
  for (const [i, t] of servers.entries()) {
    const at = `server ${i} at ${new Date().toISOString()}`
    expect(await summary(t), `${at}: summary`).toEqual(want)
    expect(await overall(t), `${at}: budgets overall`).toEqual(want)
    expect(t.server.context.ledger.spend.totals(), `${at}: tray`).toEqual(want)
    expect(await listed(t), `${at}: /api-keys`).toEqual(want)
  }
}

/** Midnight, then the next month: each day's spend is that day's calls, those stamped ahead included. */
async function acrossMidnight(servers: TestServer[]): Promise<void> {
  clock.set('2026-03-15T00:00:01Z')
  await expectSpend(servers, { day: 2, month: 3 })
  clock.set('2026-04-01T00:00:01Z')
  // The key listed in next month too: its call stamped in it is that month's (keys-ahead-month.test.ts).
  await expectSpend(servers, { day: 4, month: 4 })
}

/** Each server's spend now (before midnight), then across midnight and into the next month. */
async function fromNow(servers: TestServer[]): Promise<void> {
  await expectSpend(servers, { day: 1, month: 3 })
  await acrossMidnight(servers)
}

describe('calls stamped ahead of the clock in the in-memory spend', () => {
  it('on SQLite: count in their own day and month as recorded, and at midnight are the new day\'s', async () => {
    clock.start(START)
    await fromNow(await rig.recorded(CONFIG))
  }, 60_000)

  it('on SQLite: the same as read at start-up', async () => {
    clock.start(START)
    await rig.readAtStart(CONFIG, fromNow)
  }, 60_000)

  it('on PostgreSQL: the same as recorded, heard from another instance, and read at start-up', async () => {
    clock.start(START)
    // The last started after the calls: its spend read from PostgreSQL (the ledger's and the meters' reads).
    await fromNow(await rig.shared(CONFIG))
  }, 90_000)
})
