import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { budgetsOf } from '../../../src/main/budgets'
import { type TestServer, startTestServer } from '../../support/server'
import { holdRows, lockWaiters, until, usePostgres } from '../../support/pg-harness'
import { getJson, variedCalls } from '../../dashboard/seed'
import { TZ, admin, compare, normalize, paths } from './common'

/**
 * Two instances on one PostgreSQL re-pricing the same model at the same moment count every call
 * once: each call is changed by the one whose guarded UPDATE finds it as read, and the rollups,
 * reports, spend and budget meters of both instances move by that change once, as one SQLite
 * server re-pricing the same calls alone (2,500 calls: two chunks each).
 */
const h = usePostgres({ upstream: false })
const now = Date.now()
const base = variedCalls(300, now, 20, 5)
const unpriced = variedCalls(2_500, now, 20, 11).map((c, i) => ({
  ...c, provider: 'openai', model: 'my-house-model', priced: false, cost_usd: 0, billing: (i % 4 === 0 ? 'subscription' : 'api') as any,
}))
const calls = [...base, ...unpriced].sort((a, b) => a.ts - b.ts)
const config = { timezone: TZ, admin: { enabled: true, token: 'tok-review-parity-000' }, budgets: { rules: [{ api_key_pattern: '*', daily_limit_usd: 1e6, monthly_limit_usd: 1e6, action: 'warn' }] } }
let lite: TestServer
let a: TestServer
let b: TestServer
let dbUrl: string

beforeAll(async () => {
  lite = await startTestServer(config)
  dbUrl = h.database()
  a = await h.server({ url: dbUrl, config, upstream: null })
  b = await h.server({ url: dbUrl, config, upstream: null })
  for (const t of [a, b]) {
    const feed = budgetsOf(t.server.context).feed!
    await until('the feed listens', () => feed.status().listening && feed.stats.reloads > 0)
  }
  for (const c of calls) { lite.server.ledger.record({ ...c }); a.server.ledger.record({ ...c }) }
  expect(await lite.server.ledger.flushed()).toBe(true)
  expect(await a.server.ledger.flushed()).toBe(true)
}, 180_000)
afterAll(async () => { await lite?.cleanup() })

const PRICE = { input_mtok: 3, output_mtok: 15, cache_read_mtok: 0.3, cache_write_mtok: 3.75 }

async function budgets(t: TestServer) {
  const body = (await getJson(`${t.url}/api/dashboard/budgets`)).body
  const rows = body.rules.map((r: any) => `${r.api_key_hash} ${r.windows.map((w: any) => `${w.period}=${w.spent_usd.toFixed(9)}`).join(' ')}`).sort()
  return { overall: body.overall.map((o: any) => `${o.period}=${o.spent_usd.toFixed(9)}`), rows }
}

describe('two instances re-pricing at once', () => {
  it('count each call once: every endpoint agrees with one SQLite server re-pricing alone', async () => {
    expect((await admin(lite.url, 'PUT', 'prices/openai/my-house-model', PRICE)).status).toBe(200)
    const alone = (await admin(lite.url, 'POST', 'prices/openai/my-house-model/reprice')).json()
    expect(alone.repriced).toBe(2_500)

    expect((await admin(a.url, 'PUT', 'prices/openai/my-house-model', PRICE)).status).toBe(200)
    // The last call of the first chunk held locked: both instances read the chunk, and both are
    // updating it (one waits on the held row, the other on the first one's) before either commits.
    const store = h.store(dbUrl)
    const last = (await store.get<{ id: number }>("SELECT id FROM calls WHERE model = 'my-house-model' ORDER BY id OFFSET 1999 LIMIT 1"))!.id
    const held = await holdRows(store, 'SELECT id FROM calls WHERE id = @id', { id: last })
    const both = Promise.all([a, b].map((t) => admin(t.url, 'POST', 'prices/openai/my-house-model/reprice')))
    await lockWaiters(store, 2)
    await held.release()
    const answers = (await both).map((r) => r.json())
    expect(answers.map((x) => x.unpriced)).toEqual([0, 0])
    expect(answers[0].repriced + answers[1].repriced).toBe(2_500)
    expect(Math.abs(answers[0].cost_usd_after + answers[1].cost_usd_after - alone.cost_usd_after)).toBeLessThan(1e-6)

    for (const t of [a, b]) {
      // The other's moves come over the feed: wait until this instance's meters have them.
      const want = await budgets(lite)
      await until('the meters agree', async () => JSON.stringify(await budgets(t)) === JSON.stringify(want), 30_000)
      expect(await compare(lite.url, t.url, paths([null]), normalize)).toEqual([])
    }
  }, 300_000)
})
