import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestServer, startTestServer } from '../../support/server'
import { usePostgres } from '../../support/pg-harness'
import { variedCalls } from '../../dashboard/seed'
import { TZ, admin, compare, normalize, paths } from './common'

/** Re-pricing an unpriced model (plan calls among its calls) moves both stores alike, also after a restart. */
const h = usePostgres({ upstream: false })
const now = Date.now()
const base = variedCalls(600, now, 40, 5).map((c, i) => ({ ...c, billing: (i % 5 === 0 ? 'subscription' : 'api') as any }))
// An unpriced model's calls across the last 40 days, plan calls among them.
const unpriced = variedCalls(300, now, 40, 9).map((c, i) => ({
  ...c, provider: 'openai', model: 'my-house-model', priced: false, cost_usd: 0,
  billing: (i % 4 === 0 ? 'subscription' : 'api') as any,
}))
const calls = [...base, ...unpriced].sort((a, b) => a.ts - b.ts)
const config = { timezone: TZ, admin: { enabled: true, token: 'tok-review-parity-000' } }
let lite: TestServer
let pg: TestServer

beforeAll(async () => {
  lite = await startTestServer(config)
  pg = await h.server({ config, upstream: null })
  for (const c of calls) { lite.server.ledger.record({ ...c }); pg.server.ledger.record({ ...c }) }
  expect(await lite.server.ledger.flushed()).toBe(true)
  expect(await pg.server.ledger.flushed()).toBe(true)
}, 120_000)
afterAll(async () => { await lite?.cleanup() })

describe('re-pricing parity', () => {
  it('after PUT price + reprice, every endpoint agrees', async () => {
    const answers = []
    for (const t of [lite, pg]) {
      const put = await admin(t.url, 'PUT', 'prices/openai/my-house-model', { input_mtok: 3, output_mtok: 15, cache_read_mtok: 0.3, cache_write_mtok: 3.75 })
      expect(put.status).toBe(200)
      const r = await admin(t.url, 'POST', 'prices/openai/my-house-model/reprice')
      expect(r.status).toBe(200)
      answers.push(r.json())
    }
    expect(answers[0].repriced).toBe(300)
    expect({ ...answers[1], cost_usd_after: 0 }).toEqual({ ...answers[0], cost_usd_after: 0 })
    expect(Math.abs(answers[0].cost_usd_after - answers[1].cost_usd_after)).toBeLessThan(1e-9)
    const d = await compare(lite.url, pg.url, paths(), normalize)
    expect(d).toEqual([])
  }, 240_000)
  it('and after a restart', async () => {
    lite = await lite.restart()
    pg = await pg.restart()
    const d = await compare(lite.url, pg.url, paths(), normalize)
    expect(d).toEqual([])
  }, 240_000)
})
