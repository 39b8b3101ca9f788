import { describe, expect, it } from 'vitest'
import type { DashDeps } from '../../src/main/dashboard/deps'
import { stats } from '../../src/main/dashboard/stats'
import { summary } from '../../src/main/dashboard/summary'
import type { CallRecord } from '../../src/main/ledger/record'
import { makeCall } from '../dashboard/seed'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'

/**
 * "Avg cost / request" divided the money by every call, a subscription plan's among them (Claude
 * Max or Pro, a ChatGPT plan through Codex's login), which cost no money per token: a day of one
 * $0.90 API call and eight plan calls read $0.10 a call, a ninth of what an API call cost. The
 * summary's and the stats' average is now over the calls billed per token (`today_billed_requests`,
 * `billed_requests`), a call of no known price among them at $0 (marked, as before); on both stores,
 * whole hours and days read from the rollups and the edges from the calls.
 */

const h = usePostgres({ upstream: false })
const DAY = 86_400_000
const HOUR = 3_600_000

async function check(t: TestServer): Promise<void> {
  const now = Date.now()
  const plan = (ts: number, tenant = 'acme') =>
    makeCall({ ts, tenant, provider: 'anthropic', model: 'claude-sonnet-4-5', cost_usd: 0.3, billing: 'subscription' })
  // Today (UTC) stretches at least from midnight; the calls are a minute old at most but for the
  // hour-old ones, which are today's only after 01:00 (whole hours: the hourly rollup).
  // (At most their own few ms after midnight: they are `early - i` for i up to 3.)
  const early = now - Math.min(HOUR + 60_000, now - Math.floor(now / DAY) * DAY - 10)
  const calls: CallRecord[] = [
    makeCall({ ts: now - 1_000, tenant: 'acme', cost_usd: 0.9 }),
    makeCall({ ts: now - 2_000, tenant: 'acme', model: 'mystery-1', cost_usd: 0, priced: false }),
    ...Array.from({ length: 4 }, (_, i) => plan(now - 3_000 - i)),
    ...Array.from({ length: 4 }, (_, i) => plan(early - i)),
    // Another tenant's plan call, and two days ago a plan call and an API call (the 7-day range only).
    plan(now - 4_000, 'globex'),
    plan(now - 2 * DAY),
    makeCall({ ts: now - 2 * DAY - 1, tenant: 'acme', cost_usd: 0.2 }),
  ]
  for (const c of calls) t.server.ledger.record(c)
  expect(await t.server.ledger.flushed()).toBe(true)
  const d: DashDeps = { q: t.server.context.store, tz: 'UTC' }

  const s = await summary(d, 'acme', now)
  expect(s.today_requests).toBe(10)
  expect(s.today_billed_requests).toBe(2)
  expect(s.today_unpriced_requests).toBe(1)
  expect(s.avg_cost_per_request_usd).toBeCloseTo(0.45, 12)
  expect((await summary(d, 'globex', now)).avg_cost_per_request_usd).toBe(0)
  expect((await summary(d, 'globex', now)).today_billed_requests).toBe(0)

  const week = await stats(d, '7d', 'acme', now)
  expect(week.total_requests).toBe(12)
  expect(week.billed_requests).toBe(3)
  expect(week.avg_cost_per_request_usd).toBeCloseTo(1.1 / 3, 12)
  const all = await stats(d, '7d', null, now)
  expect(all.billed_requests).toBe(3)
}

describe('the average cost per call', () => {
  it('is over the calls billed per token on PostgreSQL', async () => {
    await check(await h.server({ config: { timezone: 'UTC' } }))
  })

  it('is over the calls billed per token on SQLite', async () => {
    await check(await h.server({ url: null, config: { timezone: 'UTC' } }))
  })
})
