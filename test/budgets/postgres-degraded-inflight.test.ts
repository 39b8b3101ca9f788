import { describe, expect, it } from 'vitest'
import { ADMIN_CONFIG } from '../admin/support'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { BODY, LIMIT, gatedUpstream, sleep, untilPostgresAdmits } from './degraded-support'
import { pgBudgetServer } from './support'

/**
 * One instance on PostgreSQL with a `reserve: max_tokens` block rule, and PostgreSQL going away
 * or coming back while calls are in flight. While it is away, calls are decided in process
 * (README: degraded); they must count this instance's calls already in flight that PostgreSQL
 * admitted, and once it is back its admissions must count the calls decided in process that are
 * still in flight. Before, each switch forgot them, and the key got its whole limit again.
 */
const h = usePostgres()
const CONFIG = { budgets: { rules: [{ api_key_pattern: 'sk-deg-*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' }] }, ...ADMIN_CONFIG }

describe('PostgreSQL away or back while calls are in flight, under a max_tokens block rule', () => {
  it('away: the calls decided in process count the calls PostgreSQL admitted that are still in flight', async () => {
    const a = await pgBudgetServer(h, h.database(), CONFIG)
    const key = 'sk-deg-away-aaaaaaaa-01'
    const up = gatedUpstream(h, key)
    const call = () => postJson(`${a.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })
    const first = Array.from({ length: 10 }, call)
    await eventually(() => up.seen() === 10, 20_000)
    // PostgreSQL answering: the 11th call does not fit.
    expect((await call()).status).toBe(429)
    h.pg.stopServer()
    try {
      const second = await Promise.race([Promise.all(Array.from({ length: 10 }, call)), sleep(15_000).then(() => null)])
      expect(second?.map((r) => r.status)).toEqual(new Array(10).fill(429))
      expect(second?.[0].json().error).toMatchObject({ type: 'budget_exceeded' })
    } finally {
      up.release()
      h.pg.startServer()
    }
    expect((await Promise.all(first)).map((r) => r.status)).toEqual(new Array(10).fill(200))
    expect(up.seen()).toBe(10)
  }, 90_000)

  it("back: PostgreSQL's admissions count the calls decided in process while it was away that are still in flight", async () => {
    const db = h.database()
    const a = await pgBudgetServer(h, db, CONFIG)
    const store = h.store(db)
    const key = 'sk-deg-back-aaaaaaaa-01'
    const up = gatedUpstream(h, key)
    const call = (k = key) => postJson(`${a.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${k}` })
    h.pg.stopServer()
    let first: ReturnType<typeof call>[]
    try {
      first = Array.from({ length: 10 }, () => call())
      await eventually(() => up.seen() === 10, 20_000)
      expect((await call()).status).toBe(429)
    } finally {
      h.pg.startServer()
    }
    await untilPostgresAdmits(store, call, 'sk-deg-probe-aaaaaaaa-')
    // Refused at once (an admitted one would wait on the held upstream).
    const second = await Promise.race([Promise.all(Array.from({ length: 10 }, () => call())), sleep(15_000).then(() => null)])
    up.release()
    expect(second?.map((r) => r.status)).toEqual(new Array(10).fill(429))
    expect((await Promise.all(first)).map((r) => r.status)).toEqual(new Array(10).fill(200))
    expect(up.seen()).toBe(10)
  }, 90_000)
})
