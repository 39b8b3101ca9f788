import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { receiver, type Receiver } from '../alerts/support'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { chatPromptAnswer } from '../support/mock-upstream'
import type { TestServer } from '../support/server'
import { callsOf, pgBudgetServer } from './support'

/**
 * A limit spent to the cent by calls whose costs sum to it exactly in decimal: ten $0.10 calls
 * against $1.00 add up to 0.9999999999999999 in binary floating point. The limit is reached (the
 * 11th call is refused, the 100% alert goes out), on one SQLite instance and on PostgreSQL, whose
 * admission compares in SQL. Each call is 1,000 input tokens of a model priced at $100 a million.
 */
const h = usePostgres({
  upstream: chatPromptAnswer(1000),
})

let hooks: Receiver
beforeAll(async () => {
  hooks = await receiver()
})
afterAll(() => hooks.close())

const config = () => ({
  timezone: 'UTC',
  pricing: { overrides: [{ model: 'gpt-4o-mini', input_mtok: 100, output_mtok: 0 }] },
  alerts: { webhooks: [{ url: hooks.url, format: 'json' }] },
  budgets: { rules: [{ api_key_pattern: 'sk-exact-*', daily_limit_usd: 1, action: 'block', alert_at_pct: [0.9, 1] }] },
})

async function spendToTheCent(t: TestServer, key: string, rows: () => Promise<number> | number): Promise<void> {
  const call = () => postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: `Bearer ${key}` })
  for (let i = 0; i < 10; i++) {
    expect((await call()).status).toBe(200)
    await eventually(async () => expect(await rows()).toBe(i + 1))
  }
  const refused = await call()
  expect(refused.status).toBe(429)
  expect(refused.json().error.message).toContain('$1.00')
  // The 90% and 100% alerts, each once.
  // Picked by the key's hint: matching its last 4 characters anywhere in a body also took the
  // other test's alerts whenever their text held them (a hash, a time, a sum's last digits).
  const mine = () => hooks.got.filter((g) => g.body.key_hint === `${key.slice(0, 3)}…${key.slice(-4)}`)
  await eventually(() => expect(mine().map((g) => g.body.threshold_pct)).toEqual([0.9, 1]))
  // The 100% alert's share says the limit is reached, as the refusal does (not 0.9999999999999999,
  // which a receiver rounding down reads as 99.9%); the spend is sent as summed.
  const full = mine()[1].body
  expect(full.spent_usd).toBeCloseTo(1, 12)
  expect(full.pct).toBeGreaterThanOrEqual(1)
}

describe('ten $0.10 calls against a $1.00 block limit', () => {
  it('one SQLite instance: the 11th is refused and the 100% alert sent', async () => {
    const key = 'sk-exact-sqlite-000000000001'
    const t = await h.server({ url: null, config: config() })
    await spendToTheCent(t, key, () => callsOf(t, key).filter((r) => r.status === 200).length)
  })

  it('PostgreSQL: the same', async () => {
    const key = 'sk-exact-postgres-0000000002'
    const t = await pgBudgetServer(h, h.database(), config())
    await spendToTheCent(t, key, async () => Number((await t.store.get<{ n: number }>("SELECT COUNT(*) AS n FROM calls WHERE status = 200 AND key_hint LIKE '%0002'"))!.n))
  })
})
