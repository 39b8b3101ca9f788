import { describe, expect, it } from 'vitest'
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
