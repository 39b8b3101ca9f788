import { describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { keyHash, makeCall } from '../dashboard/seed'
import { serversAhead } from '../support/calls-ahead'
import { useFakeDate } from '../support/fake-date'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'

/**
 * The admin API's requests_month with calls stamped ahead of the server's clock (a team member's
 * running fast, an agent's log imported from such a machine): it counted a call stamped in next
 * month in this month's requests (a start-up read too: it read every call from the month's start
 * on), and at the month's end the key was listed no more (or at 0), until a restart. A call now
 * counts in the month its stamp falls in, as it is recorded, heard from another instance, or read
 * at start-up (with a rule, read with the meters, and without), on SQLite and PostgreSQL.
 * The machine's clock is set as spend-ahead-midnight.test.ts sets it (test/support/fake-date.ts: Date only).
 */
const h = usePostgres({ upstream: false })
const clock = useFakeDate()
const rig = serversAhead(h, record)

const KEY = keyHash('sk-ahead-month-keys-0001')
const T = (iso: string) => Date.parse(iso)
/** The clock when each test starts: 10 minutes before midnight. */
const START = '2026-03-31T23:50:00Z'
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
  clock.set('2026-04-01T00:00:01Z')
  await expectRequests(servers, 2)
  clock.set('2026-05-01T00:00:01Z')
  await expectRequests(servers, 1)
}

describe('calls stamped ahead of the clock in requests_month', () => {
  it('on SQLite: count in their own month as recorded', async () => {
    clock.start(START)
    await acrossMonths(await rig.recorded(CONFIG))
  }, 60_000)

  for (const [name, config] of [['without a rule', CONFIG], ['with a rule (read with the meters)', WITH_RULE]] as const) {
    it(`on SQLite: the same as read at start-up, ${name}`, async () => {
      clock.start(START)
      await rig.readAtStart(config, acrossMonths)
    }, 60_000)
  }

  it('on PostgreSQL: the same as recorded, heard from another instance, and read at start-up', async () => {
    clock.start(START)
    // The last started after the calls: its keys read from PostgreSQL (with the meters).
    await acrossMonths(await rig.shared(CONFIG))
  }, 90_000)
})
