import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'
import { NANO_COST, NANO_FIXTURE } from './support'

/**
 * A call that carries two keys is admitted only when both are, and is billed, recorded and
 * counted under the one the provider bills (OpenAI: the bearer token). On a shared budget state
 * (PostgreSQL) the other key's spend rows must not take its cost: they did once, so a second key
 * with a small limit was refused after two calls it never paid for.
 */
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture(NANO_FIXTURE) }) })

const BILLED = 'sk-bill-aaaaaaaa-0001'
const OTHER = 'sk-other-bbbbbbbb-0001'
const rules = [
  { api_key_pattern: 'sk-bill-*', daily_limit_usd: 100, action: 'block' },
  // Room for one call's cost and a half: a third call charged to it would be refused.
  { api_key_pattern: 'sk-other-*', daily_limit_usd: NANO_COST * 1.5, action: 'block' },
]

async function threeCalls(t: TestServer): Promise<number[]> {
  const statuses: number[] = []
  for (let i = 0; i < 3; i++) {
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 300 }, {
      authorization: `Bearer ${BILLED}`,
      'x-api-key': OTHER,
    })
    statuses.push(r.status)
  }
  return statuses
}

describe('a second key on a call, with the budget state in PostgreSQL', () => {
  it('is admitted every time and charged nothing: the call costs the billed key alone', async () => {
    const url = h.database()
    const t = await h.server({ url, config: { timezone: 'UTC', budgets: { rules } } })
    expect(await threeCalls(t)).toEqual([200, 200, 200])
    const store = h.store(url)
    // Every settlement written: each of the billed key's spend rows (its rule's periods) holds the three calls' cost.
    const spent = (key: string) => store.all<{ spent_usd: number }>('SELECT spent_usd FROM budget_spend WHERE api_key_hash = @k', { k: hashKey(key) })
    const billed = await eventually(async () => {
      const rows = await spent(BILLED)
      return rows.length > 0 && rows.every((r) => r.spent_usd >= NANO_COST * 3 * (1 - 1e-9)) ? rows : undefined
    })
    for (const r of billed!) expect(r.spent_usd).toBeCloseTo(NANO_COST * 3, 12)
    for (const r of await spent(OTHER)) expect(r.spent_usd).toBe(0)
  })

  it("the same on SQLite (each key's spend is read from the ledger, where the call is the billed key's)", async () => {
    const t = await h.server({ url: null, config: { timezone: 'UTC', budgets: { rules } } })
    expect(await threeCalls(t)).toEqual([200, 200, 200])
    expect(t.server.ledger.spend.key(hashKey(OTHER)).day).toBe(0)
  })
})

describe("a second key on a call, under a per-minute request limit, with another instance on the PostgreSQL", () => {
  const RPM_BILLED = 'sk-rpm-aaaaaaaa-0001'
  const RPM_OTHER = 'sk-rpm-bbbbbbbb-0002'
  const config = { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-rpm-*', requests_per_minute: 10, action: 'block' }] } }
  const call = (t: TestServer, headers: Record<string, string>) =>
    postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }] }, headers)
  const engineOf = (t: TestServer) => budgetsOf(t.server.context).engine
  /** Requests of `key` in the last minute on `t` (under the rule), and its requests this month. */
  const used = (t: TestServer, key: string) => ({
    minute: engineOf(t).status().flatMap((r) => r.keys).find((k) => k.key.hash === hashKey(key))?.meter.requestsInLastMinute(Date.now()) ?? 0,
    month: engineOf(t).keysThisMonth().find((k) => k.hash === hashKey(key))?.requestsMonth ?? 0,
  })

  it('is one request on the other instance: counted as admitted, not again when stored', async () => {
    const url = h.database()
    const a = await h.server({ url, config })
    const b = await h.server({ url, config })
    // B listens: it has heard a call A stored.
    const warm = 'sk-rpm-warm-0000'
    expect((await call(a, { authorization: `Bearer ${warm}` })).status).toBe(200)
    await eventually(() => used(b, warm).month === 1, 20_000)

    const feedB = budgetsOf(b.server.context).feed!
    const heard = feedB.stats.admissions
    expect((await call(a, { authorization: `Bearer ${RPM_BILLED}`, 'x-api-key': RPM_OTHER })).status).toBe(200)
    expect(await a.server.ledger.flushed()).toBe(true)
    // B has heard both: the admission (as A admitted the call) and the stored call (the billed key's).
    await eventually(() => feedB.stats.admissions > heard && used(b, RPM_BILLED).month === 1, 20_000)
    expect(used(a, RPM_BILLED).minute).toBe(1)
    expect(used(b, RPM_BILLED).minute).toBe(1)
  }, 60_000)
})
