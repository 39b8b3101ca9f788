import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { pgBudgetServer } from '../budgets/support'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'
import { answer, rows } from './ledger'

/**
 * Re-pricing the advisor model (a runtime price for it, then its reprice) re-prices the calls it
 * advised: they are recorded under their executor's model, but part of their cost is the advisor's
 * tokens at the advisor's price (test/providers/anthropic-advisor.test.ts). Through a running
 * Burnrate, its admin API and its real ledger, SQLite and PostgreSQL. Sonnet 4.6: $3 input, $15
 * output per million; Opus 4.6 $5 / $25 from the price data, then $10 / $50 set at runtime.
 */

const h = usePostgres()
const config = { ...ADMIN_CONFIG, timezone: 'UTC' }

const EXECUTOR = 'claude-sonnet-4-6'
const ADVISOR = 'claude-opus-4-6'
const ITERATIONS = [
  { type: 'message', input_tokens: 2_000, output_tokens: 100 },
  { type: 'advisor_message', model: ADVISOR, input_tokens: 2_100, output_tokens: 1_600 },
  { type: 'message', input_tokens: 2_000, output_tokens: 200 },
]
const SONNET_USD = (4_000 * 3 + 300 * 15) / 1e6
type Row = { id: number; model: string; cost_usd: number; priced: number | boolean }

/** One advised call of `key`, then the advisor re-priced at $10 / $50; the call's row before and after. */
async function advisedThenRepriced(t: TestServer, key: string, calls: () => Promise<Row[]>): Promise<void> {
  answer(h.upstream, { id: 'msg_adv_r', type: 'message', role: 'assistant', model: EXECUTOR, content: [], stop_reason: 'end_turn', usage: { input_tokens: 4_000, output_tokens: 300, iterations: ITERATIONS } })
  const body = { model: EXECUTOR, max_tokens: 4_000, tools: [{ type: 'advisor_20260301', name: 'advisor', model: ADVISOR }], messages: [] }
  expect((await postJson(`${t.url}/v1/messages`, body, { 'x-api-key': key })).status).toBe(200)
  const [row] = await eventually(async () => {
    const r = await calls()
    expect(r).toHaveLength(1)
    return r
  })
  expect(row.model).toBe(EXECUTOR)
  expect(row.cost_usd).toBeCloseTo(SONNET_USD + (2_100 * 5 + 1_600 * 25) / 1e6, 12)

  expect((await admin(t.url, 'PUT', `/prices/anthropic/${ADVISOR}`, { body: { input_mtok: 10, output_mtok: 50 } })).status).toBe(200)
  const res = await admin(t.url, 'POST', `/prices/anthropic/${ADVISOR}/reprice?all=true`)
  expect(res.status).toBe(200)
  expect(await res.json()).toMatchObject({ provider: 'anthropic', model: ADVISOR, repriced: 1, unpriced: 0 })
  const now = SONNET_USD + (2_100 * 10 + 1_600 * 50) / 1e6
  const [after] = await calls()
  expect(after).toMatchObject({ id: row.id, model: EXECUTOR })
  expect(Number(after.priced)).toBe(1)
  expect(after.cost_usd).toBeCloseTo(now, 12)
  // The key's spend moved with it.
  await eventually(() => expect(t.server.ledger.spend.key(hashKey(key)).day).toBeCloseTo(now, 12))
}

describe('re-pricing the advisor model', () => {
  it("SQLite: re-prices the calls it advised, their executor's part as it was, the advice at the advisor's new price", async () => {
    const t = await h.server({ url: null, config })
    const key = 'sk-ant-advisor-reprice-sqlite-0001'
    await advisedThenRepriced(t, key, async () => rows(t).filter((r) => r.api_key_hash === hashKey(key)))
  })

  it('PostgreSQL: the same', async () => {
    const t = await pgBudgetServer(h, h.database(), config)
    const key = 'sk-ant-advisor-reprice-postgres-0001'
    await advisedThenRepriced(t, key, () => t.store.all<Row>('SELECT id, model, cost_usd, priced FROM calls WHERE api_key_hash = @k ORDER BY id', { k: hashKey(key) }))
  })
})
