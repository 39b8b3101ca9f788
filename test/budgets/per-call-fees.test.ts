import { beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'
import { callsOf, pgBudgetServer } from './support'

/**
 * Charges that only the answer names (here one web search of the Responses API's web_search tool,
 * $10 per 1,000, beside $0.00829 of gpt-5 tokens in the recorded answer) are learnt by a `block`
 * rule's default `expected` reservation: once the model's history has seen such answers, 20 calls
 * in flight together reserve each one's search as well as its tokens, and the key's spend passes its
 * limit by less than one call (a call is admitted while the spend and what is in flight are under
 * it); reserving the tokens alone let 13 in for $0.24 under a $0.10 limit. On SQLite and on
 * PostgreSQL alike.
 */

const FIXTURE = 'openai-responses/responses-stream-cached-reasoning.sse'
const LIMIT = 0.1
const BODY = { model: 'gpt-5', input: 'What is the weather in San Francisco?', tools: [{ type: 'web_search' }], stream: true }
const config = { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-fees-block-*', daily_limit_usd: LIMIT, action: 'block' }] } }

const h = usePostgres()
beforeAll(() => {
  const body = fixture(FIXTURE)
  h.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, body, headerDelayMs: 300 }))
})

const call = (t: TestServer, key: string) => postJson(`${t.url}/v1/responses`, BODY, { authorization: `Bearer ${key}` })

/** Five answered calls of the model under no rule (the history's minimum), one after another; what one cost. */
async function learn(t: TestServer, key: string, costs: () => Promise<number[]> | number[]): Promise<number> {
  for (let i = 0; i < 5; i++) expect((await call(t, key)).status).toBe(200)
  const each = await eventually(async () => {
    const c = await costs()
    expect(c).toHaveLength(5)
    return c[0]
  })
  // The tokens' $0.00829 and the search's $0.01.
  expect(each).toBeGreaterThan(0.018)
  return each
}

/** 20 calls at once; how many were admitted. */
async function burst(t: TestServer, key: string, stored: () => Promise<number> | number): Promise<number> {
  const replies = await Promise.all(Array.from({ length: 20 }, () => call(t, key)))
  await eventually(async () => expect(await stored()).toBe(20), 20_000)
  const ok = replies.filter((r) => r.status === 200).length
  expect(ok).toBeGreaterThan(0)
  expect(replies.filter((r) => r.status === 429).length).toBe(20 - ok)
  return ok
}

describe('expected reservations learn what calls cost beyond their tokens (web searches), 20 calls at once', () => {
  it('SQLite: the spend passes the limit by less than one call', async () => {
    const t = await h.server({ url: null, config })
    const learnt = 'sk-fees-learn-sqlite-aaaaaaaa-0001'
    const key = 'sk-fees-block-sqlite-aaaaaaaa-0001'
    const each = await learn(t, learnt, () => callsOf(t, learnt).map((c) => c.cost_usd))
    const ok = await burst(t, key, () => callsOf(t, key).length)
    const spent = callsOf(t, key).reduce((s, c) => s + c.cost_usd, 0)
    expect(spent).toBeCloseTo(ok * each, 12)
    expect(spent).toBeLessThan(LIMIT + each)
  })

  it('PostgreSQL: the same', async () => {
    const t = await pgBudgetServer(h, h.database(), config)
    const learnt = 'sk-fees-learn-postgres-aaaaaaaa-0002'
    const key = 'sk-fees-block-postgres-aaaaaaaa-0002'
    const costs = async (k: string) => (await t.store.all<{ cost_usd: number }>('SELECT cost_usd FROM calls WHERE api_key_hash = @k ORDER BY id', { k: hashKey(k) })).map((r) => r.cost_usd)
    const each = await learn(t, learnt, () => costs(learnt))
    const ok = await burst(t, key, async () => (await costs(key)).length)
    const spent = (await costs(key)).reduce((s, c) => s + c, 0)
    expect(spent).toBeCloseTo(ok * each, 12)
    expect(spent).toBeLessThan(LIMIT + each)
  })
})
