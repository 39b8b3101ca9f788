import { afterEach, describe, expect, it, vi } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { keyHash, makeCall } from '../dashboard/seed'
import { until, usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'

/**
 * The admin API's requests_month with calls stamped ahead of the server's clock (a team member's
 * running fast, an agent's log imported from such a machine): it counted a call stamped in next
 * month in this month's requests (a start-up read too: it read every call from the month's start
 * on), and at the month's end the key was listed no more (or at 0), until a restart. A call now
 * counts in the month its stamp falls in, as it is recorded, heard from another instance, or read
 * at start-up (with a rule, read with the meters, and without), on SQLite and PostgreSQL.
 * The machine's clock is set as spend-ahead-midnight.test.ts sets it (vi.setSystemTime, Date only).
 */
const h = usePostgres({ upstream: false })

afterEach(() => {
  vi.useRealTimers()
})

const KEY = keyHash('sk-ahead-month-keys-0001')
const T = (iso: string) => Date.parse(iso)
const CONFIG = { ...ADMIN_CONFIG, timezone: 'UTC' }
const RULE = { api_key_pattern: '*', monthly_limit_usd: 100, action: 'warn' }
const WITH_RULE = { ...CONFIG, budgets: { rules: [RULE] } }

/** One call this month (March), two stamped in April's first minutes, one in May's. */
function record(t: TestServer): Promise<boolean> {
  const ahead = { source: 'import' as const, latency_ms: 0 }
  t.server.ledger.record(makeCall({ ts: T('2026-03-31T23:40:00Z'), api_key_hash: KEY, cost_usd: 1 }))
  t.server.ledger.record(makeCall({ ts: T('2026-04-01T00:05:00Z'), api_key_hash: KEY, cost_usd: 2, ...ahead }))
  t.server.ledger.record(makeCall({ ts: T('2026-04-01T00:07:00Z'), api_key_hash: KEY, cost_usd: 2, ...ahead }))
  t.server.ledger.record(makeCall({ ts: T('2026-05-01T00:01:00Z'), api_key_hash: KEY, cost_usd: 8, ...ahead }))
  return t.server.ledger.flushed()
}

/** The key's requests this month as the admin API lists them (0: not listed). */
async function requests(t: TestServer): Promise<number> {
  const r = await admin(t.url, 'GET', '/api-keys')
  expect(r.status).toBe(200)
  const row = (r.json() as { api_key_hash: string; requests_month: number }[]).find((k) => k.api_key_hash === KEY)
  return row?.requests_month ?? 0
}

async function expectRequests(servers: TestServer[], want: number): Promise<void> {
  for (const [i, t] of servers.entries()) expect(await requests(t), `server ${i} at ${new Date().toISOString()}`).toBe(want)
}

/** At 23:50 on March 31st one request; in April the two stamped in it; in May the one of May. */
async function acrossMonths(servers: TestServer[]): Promise<void> {
  await expectRequests(servers, 1)
  vi.setSystemTime(T('2026-04-01T00:00:01Z'))
  await expectRequests(servers, 2)
  vi.setSystemTime(T('2026-05-01T00:00:01Z'))
  await expectRequests(servers, 1)
}

function fakeClock(): void {
  vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: false })
  vi.setSystemTime(T('2026-03-31T23:50:00Z'))
}

describe('calls stamped ahead of the clock in requests_month', () => {
  it('on SQLite: count in their own month as recorded', async () => {
    fakeClock()
    const t = await h.server({ url: null, config: CONFIG })
    await record(t)
    await acrossMonths([t])
  }, 60_000)

  for (const [name, config] of [['without a rule', CONFIG], ['with a rule (read with the meters)', WITH_RULE]] as const) {
    it(`on SQLite: the same as read at start-up, ${name}`, async () => {
      fakeClock()
      const first = await h.server({ url: null, config })
      await record(first)
      const t = await first.restart()
      try {
        await acrossMonths([t])
      } finally {
        await t.stop()
      }
    }, 60_000)
  }

  it('on PostgreSQL: the same as recorded, heard from another instance, and read at start-up', async () => {
    fakeClock()
    const url = h.database()
    const feedRead = (t: TestServer) => {
      const feed = t.server.context.healthSections.calls_feed as () => { listening: boolean; reads: number; heard: number }
      return feed()
    }
    const [a, b] = [await h.server({ url, config: CONFIG }), await h.server({ url, config: CONFIG })]
    for (const t of [a, b]) await until('the meters read from PostgreSQL', () => feedRead(t).listening && feedRead(t).reads >= 1)
    await record(a)
    await until("b heard a's calls (one notification)", () => feedRead(b).heard >= 1)
    // Started after them: its keys read from PostgreSQL (with the meters).
    const c = await h.server({ url, config: CONFIG })
    await until('the meters read from PostgreSQL', () => feedRead(c).listening && feedRead(c).reads >= 1)
    await acrossMonths([a, b, c])
  }, 90_000)
})
