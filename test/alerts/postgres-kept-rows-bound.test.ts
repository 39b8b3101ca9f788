import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { KEPT_ROWS } from '../../src/main/budgets/shared'
import { hashKey } from '../../src/main/proxy/attribution'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { getJson, makeCall } from '../dashboard/seed'
import { until, usePostgres } from '../support/pg-harness'
import { NANO_COST, pgBudgetServer } from '../budgets/support'

/**
 * PostgreSQL: between two reads of the meters, an instance keeps a row per key, scope, session and
 * minute of what it counted besides the read's rows (other instances' calls heard, cost moves, its
 * own calls), for the rule changes that rebuild the meters. Reads came only at start-up, rule and
 * clock changes, and when the calls feed may have missed something: on a busy cluster with none
 * of those, the rows grew with every call for as long as the process ran. Past KEPT_ROWS more rows
 * than the last read left, the calls are read again (their rows hold them), counted once.
 */

const h = usePostgres()

describe('the rows kept between reads of the meters (PostgreSQL)', () => {
  it('past KEPT_ROWS: read again, and the spend counted once', async () => {
    const max = KEPT_ROWS.max
    KEPT_ROWS.max = 3
    h.onTeardown(() => {
      KEPT_ROWS.max = max
    })
    const url = h.database()
    const config = { ...ADMIN_CONFIG, timezone: 'UTC', budgets: { rules: [{ api_key_pattern: '*', daily_limit_usd: 10, action: 'warn' }] } }
    const b = await h.server({ url, config })
    const a = await pgBudgetServer(h, url, config)
    const feed = budgetsOf(a.server.context).feed!
    for (const t of [a, b]) {
      const f = budgetsOf(t.server.context).feed!
      await until('the feed listens and the meters are read', () => f.status().listening && f.stats.reloads >= 2)
    }
    const key = 'sk-kept-rows-bound'
    const spent = async () => {
      const body = (await getJson(`${a.url}/api/dashboard/budgets`)).body
      return body.rules.find((r: any) => r.api_key_hash === hashKey(key))?.windows.find((w: any) => w.period === 'daily').spent_usd ?? 0
    }
    const reloads = feed.stats.reloads

    // Six of B's calls, each of its own session (a row of its own), heard by A one by one.
    for (let i = 1; i <= 6; i++) {
      b.server.ledger.record(makeCall({ api_key_hash: hashKey(key), model: 'gpt-5-nano', session: `kept-${i}`, cost_usd: NANO_COST }))
      expect(await b.server.ledger.flushed()).toBe(true)
      await until(`A counts call ${i}`, async () => Math.abs((await spent()) - NANO_COST * i) < 1e-12)
    }
    // The fourth row passed the bound: A read its meters again.
    await until('A reads its meters again', () => feed.stats.reloads > reloads, 10_000).catch(() => {})
    expect(feed.stats.reloads).toBeGreaterThan(reloads)
    expect(await spent()).toBeCloseTo(NANO_COST * 6, 12)

    // A rule change rebuilds from that read and what was kept since: each call still once.
    const before = feed.stats.reloads
    expect((await admin(a.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-other-*', daily_limit_usd: 5, action: 'warn' } })).status).toBe(201)
    expect(await spent()).toBeCloseTo(NANO_COST * 6, 12)
    await until('the read is done', () => feed.stats.reloads > before)
    expect(await spent()).toBeCloseTo(NANO_COST * 6, 12)
  }, 90_000)
})
