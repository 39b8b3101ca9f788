import { describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { eventually } from '../support/http'
import { fixture } from '../support/fixtures'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, chat } from './support'

/**
 * On PostgreSQL an instance reads every instance's spend again with its meters (at start-up, a
 * rule change, a reconnection): today's and this month's, for the tray, the budgets API's overall
 * and the admin API's keys. The read asked for the day it began in and stored the answer as the
 * day it ended in: one that straddled midnight (a slow database, a big ledger) made yesterday's
 * whole spend today's, until the next read, which may be days away.
 */
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture(NANO_FIXTURE) }) })

const DAY = 86_400_000
const tomorrow = (now: number) => Math.floor(now / DAY) * DAY + DAY + 5000

describe("today's spend read from PostgreSQL across midnight", () => {
  it("is the day it was read for: the next day starts at $0", async () => {
    const t = await h.server({ config: { ...ADMIN_CONFIG, timezone: 'UTC' } })
    const spend = t.server.context.ledger.spend
    expect((await chat(t, 'sk-midnight-aaaaaaaaaaaa-0001')).status).toBe(200)
    await eventually(() => spend.totals().day === NANO_COST)
    // The next read's answer is stored as midnight has just passed (the read took that long).
    const replace = spend.replace.bind(spend)
    let replaced = 0
    spend.replace = (rows, now) => {
      const real = Date.now
      Date.now = () => tomorrow(real())
      try {
        replace(rows, now)
      } finally {
        Date.now = real
        replaced++
      }
    }
    // A rule change reads the meters again.
    expect((await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-other-*', daily_limit_usd: 5, action: 'warn' } })).status).toBe(201)
    await eventually(() => replaced > 0, 20_000)
    expect(spend.totals().day).toBe(NANO_COST)
    expect(spend.totals(tomorrow(Date.now())).day).toBe(0)
  }, 60_000)
})
