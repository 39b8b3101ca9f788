import { describe, expect, it } from 'vitest'
import { GROUP_BYS } from '../../src/shared/api'
import { costs } from '../../src/main/dashboard/costs'
import type { DashDeps } from '../../src/main/dashboard/deps'
import { sessions } from '../../src/main/dashboard/sessions'
import { summary } from '../../src/main/dashboard/summary'
import type { CallRecord } from '../../src/main/ledger/record'
import { startOfDay, startOfMonth } from '../../src/main/time/zone'
import { makeCall } from '../dashboard/seed'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'

/**
 * A call of a model with no known price is recorded at $0 (`priced: false`). The dashboard's
 * cost rows, session rows and summary spend summed it as $0 and said nothing: an agent that spent
 * an unknown amount read "$0.00". Each now counts its unpriced calls (`unpriced_requests`,
 * `today_unpriced_requests`, `month_unpriced_requests`), on both stores alike: calls billed per
 * token of no known price, whether the window's middle is read from the day and hour rollups or
 * its edges from the calls; a subscription call (money 0 priced or not) is none.
 */

const h = usePostgres({ upstream: false })
const DAY = 86_400_000
const HOUR = 3_600_000

interface Seeded {
  now: number
  /** The unpriced calls billed per token, of tenant acme, agent coder, session s-1, model mystery-1 at openai. */
  unpriced: number[]
}

async function seed(t: TestServer): Promise<Seeded> {
  const now = Date.now()
  const base = { tenant: 'acme', agent: 'coder', session: 's-1', provider: 'openai' }
  // The unpriced ones: two days ago (a whole day of the rollups), three hours ago (a whole hour) and a moment ago (calls).
  const unpriced = [now - 2 * DAY - 7 * HOUR, now - 3 * HOUR - 60_000, now - 1_000]
  const calls: CallRecord[] = [
    ...unpriced.map((ts) => makeCall({ ...base, ts, model: 'mystery-1', cost_usd: 0, priced: false })),
    makeCall({ ...base, ts: now - 2 * DAY, model: 'gpt-4o-mini', cost_usd: 0.5 }),
    makeCall({ ...base, ts: now - 2_000, model: 'gpt-4o-mini', cost_usd: 0.25 }),
    // A plan's call of a model with no price: its money is 0 whatever the price, so it is no unpriced spend.
    makeCall({ ts: now - 5_000, provider: 'anthropic', model: 'mystery-1', agent: 'planner', session: 's-plan', cost_usd: 0, priced: false, billing: 'subscription' }),
    // A session that began 40 days ago with an unpriced call, still in use: its row covers the whole session.
    makeCall({ ts: now - 40 * DAY, provider: 'openai', model: 'mystery-1', agent: 'coder', session: 's-old', cost_usd: 0, priced: false }),
    makeCall({ ts: now - 10_000, provider: 'openai', model: 'gpt-4o-mini', agent: 'coder', session: 's-old', cost_usd: 0.1 }),
  ]
  for (const c of calls) t.server.ledger.record(c)
  expect(await t.server.ledger.flushed()).toBe(true)
  return { now, unpriced }
}

async function check(t: TestServer): Promise<void> {
  const { now, unpriced } = await seed(t)
  const d: DashDeps = { q: t.server.context.store, tz: 'UTC' }
  const n = (since: number) => unpriced.filter((ts) => ts >= since).length

  const byModel = await costs(d, 'model', '30d', null, now)
  const model = (key: string, provider: string) => byModel.rows.find((r) => r.key === key && r.provider === provider)
  expect(model('mystery-1', 'openai')).toMatchObject({ requests: 3, cost_usd: 0, unpriced_requests: 3 })
  expect(model('gpt-4o-mini', 'openai')).toMatchObject({ requests: 3, unpriced_requests: 0 })
  expect(model('mystery-1', 'anthropic')).toMatchObject({ requests: 1, unpriced_requests: 0 })

  // Every grouping: the acme/coder/s-1/openai group holds the 3, the others none.
  const expected: Record<string, Record<string, number>> = {
    provider: { openai: 3, anthropic: 0 },
    agent: { coder: 3, planner: 0 },
    session: { 's-1': 3, 's-plan': 0, 's-old': 0 },
    tenant: { acme: 3, '': 0 },
    api_key: { [makeCall().api_key_hash]: 3 },
    project: { '': 3 },
    member: { '': 3 },
  }
  for (const g of GROUP_BYS.filter((x) => x !== 'model')) {
    const rows = (await costs(d, g, '30d', null, now)).rows
    expect(Object.fromEntries(rows.map((r) => [r.key, r.unpriced_requests])), g).toEqual(expected[g])
  }
  // The window counts: the last 24 hours hold two of them; tenant acme all three; another tenant none.
  expect((await costs(d, 'model', '24h', null, now)).rows.find((r) => r.key === 'mystery-1' && r.provider === 'openai')?.unpriced_requests).toBe(2)
  expect((await costs(d, 'agent', '30d', 'acme', now)).rows).toMatchObject([{ key: 'coder', unpriced_requests: 3 }])
  expect((await costs(d, 'agent', '30d', 'globex', now)).rows).toEqual([])
  // Folded past the limit, the (other) row sums the groups it holds.
  const folded = await costs(d, 'model', '30d', null, now, 1)
  expect(folded.rows.reduce((s, r) => s + r.unpriced_requests, 0)).toBe(3)

  const s = await summary(d, null, now)
  expect(s.today_unpriced_requests).toBe(n(startOfDay(now, 'UTC')))
  expect(s.month_unpriced_requests).toBe(n(startOfMonth(now, 'UTC')))
  expect(await summary(d, 'globex', now)).toMatchObject({ today_unpriced_requests: 0, month_unpriced_requests: 0 })

  const list = (await sessions(d, null, now)).sessions
  const row = (session: string) => list.find((r) => r.session === session)
  expect(row('s-1')).toMatchObject({ agent: 'coder', tenant: 'acme', requests: 5, unpriced_requests: 3 })
  expect(row('s-old')).toMatchObject({ requests: 2, unpriced_requests: 1 })
  expect(row('s-plan')).toMatchObject({ requests: 1, unpriced_requests: 0 })
  expect((await sessions(d, 'acme', now)).sessions).toMatchObject([{ session: 's-1', unpriced_requests: 3 }])

  // Read by time from their own partial index (a migration on either store), not through every call of the window.
  const index = d.q.dialect === 'postgres'
    ? "SELECT count(*) AS n FROM pg_indexes WHERE indexname = 'calls_unpriced_spend'"
    : "SELECT count(*) AS n FROM sqlite_master WHERE type = 'index' AND name = 'calls_unpriced_spend'"
  expect(Number((await d.q.get<{ n: number }>(index))!.n)).toBe(1)
}

describe('unpriced calls in the dashboard totals', () => {
  it('are counted on PostgreSQL', async () => {
    await check(await h.server({ config: { timezone: 'UTC' } }))
  })

  it('are counted on SQLite', async () => {
    await check(await h.server({ url: null, config: { timezone: 'UTC' } }))
  })
})
