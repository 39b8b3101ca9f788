import { calcPrice } from '@pydantic/genai-prices'
import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import type { BurnrateServer } from '../../src/main/server/server'
import type { PostgresStore } from '../../src/main/storage/postgres'
import { eventually, postJson } from '../support/http'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from './support'

/**
 * Two real Burnrate servers in PostgreSQL mode (`storage.url`, each with its own data folder)
 * on one database: 200 concurrent calls through the proxy, split across them, against one
 * `block` rule; a rule created through one server's admin API.
 */

const MAX_TOKENS = 300
const BODY = { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: MAX_TOKENS }
/** What the proxy reserves for each call under `reserve: max_tokens`: body bytes / 3 as input, max tokens as output. */
const WORST = calcPrice({ input_tokens: Math.ceil(Buffer.byteLength(JSON.stringify(BODY)) / 3), output_tokens: MAX_TOKENS }, 'gpt-5-nano', {
  providerId: 'openai',
})!.total_price
const LIMIT = NANO_COST * 40.5

const h = usePostgres()

const server = (url: string, rules: unknown[], dataDir?: string) => pgBudgetServer(h, url, { budgets: { rules }, ...ADMIN_CONFIG }, dataDir)

/** The cost of every answered call of `key`, as the servers recorded it in PostgreSQL. */
async function costsOf(servers: BurnrateServer[], store: PostgresStore, key: string): Promise<number[]> {
  for (const s of servers) await s.ledger.flushed()
  const rows = await store.all<{ cost_usd: number }>('SELECT cost_usd FROM calls WHERE api_key_hash = @k AND status = 200', { k: hashKey(key) })
  return rows.map((r) => r.cost_usd)
}

describe('two servers, one PostgreSQL budget state', () => {
  it('200 concurrent calls split across them never take a reserve: max_tokens rule over its limit, and its spend is the sum of the calls', async () => {
    const url = h.database()
    const rules = [{ api_key_pattern: 'sk-two-servers-*', daily_limit_usd: LIMIT, action: 'block', reserve: 'max_tokens' }]
    const a = await server(url, rules)
    const b = await server(url, rules)
    expect(WORST).toBeGreaterThan(NANO_COST)
    // Every admitted call waits at the provider, so many are in flight on both servers together.
    replayJson(h.upstream, NANO_FIXTURE, { headerDelayMs: 200 })
    const key = 'sk-two-servers-aaaaaaaa-0001'
    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, i) => postJson(`${[a, b][i % 2].url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })),
    )
    const ok = replies.filter((r) => r.status === 200).length
    const refused = replies.filter((r) => r.status === 429)
    expect(ok + refused.length).toBe(200)
    expect(ok).toBeGreaterThan(0)
    expect(refused.length).toBeGreaterThan(0)
    for (const r of refused) expect(r.json().error.type).toBe('budget_exceeded')
    // Both servers admitted calls: the limit was shared, not per server.
    expect(replies.filter((r, i) => i % 2 === 0 && r.status === 200).length).toBeGreaterThan(0)
    expect(replies.filter((r, i) => i % 2 === 1 && r.status === 200).length).toBeGreaterThan(0)

    const costs = await eventually(async () => {
      const c = await costsOf([a.server, b.server], a.store, key)
      return c.length === ok ? c : null
    }, 20_000)
    const sum = costs!.reduce((s, c) => s + c, 0)
    // A call is admitted only when its worst case fits in what is left: no overshoot at all.
    expect(sum).toBeLessThanOrEqual(LIMIT)
    // Settlement is asynchronous (after the answer): wait for the row to hold every call.
    const row = async () =>
      a.store.get<{ spent_usd: number; reserved_usd: number }>(
        "SELECT spent_usd, reserved_usd FROM budget_spend WHERE api_key_hash = @k AND period = 'daily'",
        { k: hashKey(key) },
      )
    await eventually(async () => Math.abs((await row())!.spent_usd - sum) <= sum * 1e-9, 20_000)
    expect((await row())!.reserved_usd).toBeLessThan(1e-12)
  }, 120_000)

  it('a rule created through one server’s admin API refuses calls on the other', async () => {
    const url = h.database()
    const a = await server(url, [])
    const b = await server(url, [])
    replayJson(h.upstream, NANO_FIXTURE)
    const key = 'sk-admin-shared-bbbbbbbb-0002'
    const call = (s: { url: string }) => postJson(`${s.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })
    expect((await call(b)).status).toBe(200)
    const created = await admin(a.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-admin-shared-*', daily_limit_usd: 0, action: 'block' } })
    expect(created.status).toBe(201)
    expect((await call(a)).status).toBe(429)
    const refused = await eventually(async () => {
      const r = await call(b)
      return r.status === 429 ? r : null
    }, 10_000)
    expect(refused!.json().error).toMatchObject({ type: 'budget_exceeded', api_key_pattern: 'sk-admin-shared-*', limit_usd: 0 })
    // Listed by the other server's admin API too; deleted through it, the first one lets calls through again.
    expect((await admin(b.url, 'GET', '/budgets/rules')).json().map((r: { api_key_pattern: string }) => r.api_key_pattern)).toEqual(['sk-admin-shared-*'])
    expect((await admin(b.url, 'DELETE', '/budgets/rules?pattern=sk-admin-shared-*')).status).toBe(204)
    await eventually(async () => (await call(a)).status === 200, 10_000)
  }, 60_000)

  it('a server restarted while PostgreSQL is away starts at once and enforces the shared rules it last read', async () => {
    const url = h.database()
    const a = await server(url, [])
    replayJson(h.upstream, NANO_FIXTURE)
    const key = 'sk-remembered-cccccccc-0003'
    const call = (s: { url: string }) => postJson(`${s.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })
    expect((await admin(a.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-remembered-*', daily_limit_usd: 0, action: 'block' } })).status).toBe(201)
    expect((await call(a)).status).toBe(429)
    await a.stop()
    h.pg.stopServer()
    try {
      const again = await server(url, [], a.dir)
      const r = await call(again)
      expect(r.status).toBe(429)
      expect(r.json().error).toMatchObject({ type: 'budget_exceeded', api_key_pattern: 'sk-remembered-*' })
      // Calls under no rule pass meanwhile.
      expect((await postJson(`${again.url}/v1/chat/completions`, BODY, { authorization: 'Bearer sk-other-dddddddd-0004' })).status).toBe(200)
    } finally {
      h.pg.startServer()
    }
  }, 90_000)

  it("a server started later warns from the spend the other server recorded (its meters start from PostgreSQL's calls)", async () => {
    const url = h.database()
    const rules = [{ api_key_pattern: 'sk-warned-*', daily_limit_usd: NANO_COST / 2, action: 'warn' }]
    const a = await server(url, rules)
    replayJson(h.upstream, NANO_FIXTURE)
    const key = 'sk-warned-eeeeeeee-0005'
    const first = await postJson(`${a.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })
    expect(first.status).toBe(200)
    expect(first.headers['x-burnrate-budget-warning']).toBeUndefined()
    expect(await a.server.ledger.flushed()).toBe(true)
    const b = await server(url, rules)
    // B has recorded nothing itself; its meters read A's call from PostgreSQL (no call through B needed)...
    const engineB = budgetsOf(b.server.context).engine
    // (it reads the meters' calls, then this month's keys: the key listed means both are in)
    await eventually(() => engineB.keysThisMonth().some((k) => k.hash === hashKey(key)), 20_000)
    // ...so B's very first call carries the warning.
    const warned = await postJson(`${b.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })
    expect(String(warned!.headers['x-burnrate-budget-warning'])).toMatch(/^sk-warned-\* daily /)
  }, 60_000)
})
