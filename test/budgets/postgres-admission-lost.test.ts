import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { getJson } from '../dashboard/seed'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_FIXTURE, pgBudgetServer, replayJson } from './support'

/**
 * PostgreSQL: a call admitted under a per-minute request limit is told to the other instances as
 * it is admitted (budgets/feed/admissions.ts), and its storing then does not count it again
 * (`rate_announced`). When that notification could not be sent (the statement failed: a
 * connection cut, PostgreSQL restarting), the call still carried `rate_announced`: the other
 * instances counted it neither as admitted nor as stored, and let the key past its limit there.
 * A call whose admission was not told is counted by the others as it is stored.
 */

const h = usePostgres()
const BODY = { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }] }
type Server = Awaited<ReturnType<typeof pgBudgetServer>>
const call = (s: Server, key: string) => postJson(`${s.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })

/** Requests a server's meter of `key` counts in the last minute. */
function rateUsed(s: Server, key: string): number {
  for (const r of budgetsOf(s.server.context).engine.status()) {
    for (const k of r.keys) if (k.key.hash === hashKey(key)) return k.meter.requestsInLastMinute(Date.now())
  }
  return 0
}

const requestsMonth = (s: Server, key: string) => budgetsOf(s.server.context).engine.keysThisMonth().find((k) => k.hash === hashKey(key))?.requestsMonth ?? 0

describe('an admission whose notification failed (PostgreSQL)', () => {
  it('is counted by the other instance as the call is stored, and the limit holds there', async () => {
    const rules = [{ api_key_pattern: 'sk-adml-*', requests_per_minute: 3, action: 'block' }]
    const url = h.database()
    const a = await pgBudgetServer(h, url, { budgets: { rules } })
    const b = await pgBudgetServer(h, url, { budgets: { rules } })
    replayJson(h.upstream, NANO_FIXTURE)
    for (const [i, s] of [a, b].entries()) {
      const warm = `sk-adml-warm-000${i}`
      expect((await call(s, warm)).status).toBe(200)
      await eventually(async () => (await getJson(`${s.url}/api/dashboard/budgets`)).body.rules.some((r: any) => r.api_key_hash === hashKey(warm)), 20_000)
      await eventually(() => (budgetsOf(s.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
    }
    // A's notifications of admissions fail (its other statements, the calls' storing among them, do not).
    const store = a.server.context.store
    const run = store.run.bind(store)
    let failed = 0
    store.run = (sql: string, params?: any) => {
      if (sql.includes("'0 ' || p")) {
        failed++
        return Promise.reject(new Error('Connection terminated unexpectedly'))
      }
      return run(sql, params)
    }
    // Answered after 300 ms: the notification has failed by the time each call is recorded.
    replayJson(h.upstream, NANO_FIXTURE, { headerDelayMs: 300 })
    const key = 'sk-adml-aaaaaaaa-0001'
    for (let i = 0; i < 2; i++) expect((await call(a, key)).status).toBe(200)
    expect(failed).toBeGreaterThan(0)
    await a.server.ledger.flushed()
    // B has heard both calls stored...
    await eventually(() => requestsMonth(b, key) === 2, 20_000)
    // ...and counts them in the key's minute, as A does.
    expect(rateUsed(a, key)).toBe(2)
    expect(rateUsed(b, key)).toBe(2)
    expect((await call(b, key)).status).toBe(200)
    const refused = await call(b, key)
    expect(refused.status).toBe(429)
    expect(refused.json().error).toMatchObject({ type: 'rate_limited', unit: 'requests_per_minute', limit: 3, used: 3 })
  }, 90_000)
})
