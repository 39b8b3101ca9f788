import { describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { BODY, LIMIT, gatedUpstream, sleep, untilPostgresAdmits } from './degraded-support'
import { pgBudgetServer } from './support'

/**
 * Calls decided in process while PostgreSQL was away, still in flight once it is back, count in
 * its admissions (postgres-degraded-inflight.test.ts), and so they must after the rule's scope is
 * edited: the edited rule carries the key's calls in flight over (README, Budgets). Before, they
 * were held by the rule's scope as well as its pattern, so the edited rule's admissions counted
 * none of them, and the key got its whole limit again.
 */
const h = usePostgres()
const CONFIG = { budgets: { rules: [{ api_key_pattern: 'sk-degedit-*', model_pattern: 'gpt-5-nano*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' }] }, ...ADMIN_CONFIG }

describe('PostgreSQL back, then the rule edited, while calls decided in process are in flight', () => {
  it("the edited rule's admissions still count them", async () => {
    const db = h.database()
    const a = await pgBudgetServer(h, db, CONFIG)
    const store = h.store(db)
    const key = 'sk-degedit-aaaaaaaa-01'
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
    await untilPostgresAdmits(store, call, 'sk-degedit-probe-aaaaaaaa-')
    // Widened: the calls in flight are still the rule's calls.
    const put = await admin(a.url, 'POST', '/budgets/rules', {
      body: { api_key_pattern: 'sk-degedit-*', model_pattern: 'gpt-5*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' },
    })
    expect(put.status).toBeLessThan(300)
    // Refused at once (an admitted one would wait on the held upstream).
    const second = await Promise.race([Promise.all(Array.from({ length: 10 }, () => call())), sleep(15_000).then(() => null)])
    up.release()
    expect(second?.map((r) => r.status)).toEqual(new Array(10).fill(429))
    expect((await Promise.all(first)).map((r) => r.status)).toEqual(new Array(10).fill(200))
    expect(up.seen()).toBe(10)
  }, 90_000)
})
