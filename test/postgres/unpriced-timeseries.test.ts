import { describe, expect, it } from 'vitest'
import { RANGES } from '../../src/shared/api'
import type { CallRecord } from '../../src/main/ledger/record'
import { RANGE_MS } from '../../src/main/dashboard/window'
import { getJson, makeCall } from '../dashboard/seed'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'

/**
 * The timeseries' buckets summed a call of a model with no known price as $0 and said nothing:
 * the spend chart showed a bucket of only such calls at $0, as if free. Each bucket now says how
 * many it holds (`unpriced_requests`), on both stores, whether the bucket is read from the calls
 * (30m, 1h) or the rollups (the others); a plan's call (money 0 priced or not) and another
 * tenant's under a tenant filter are none, and one stamped ahead of the clock is the newest bucket's.
 */

const h = usePostgres({ upstream: false })
const HOUR = 3_600_000
const DAY = 24 * HOUR

async function check(t: TestServer): Promise<void> {
  const now = Date.now()
  const base = { tenant: 'acme', agent: 'coder', session: 's-1', provider: 'openai', model: 'mystery-1', cost_usd: 0, priced: false }
  // acme's unpriced calls: a moment ago, three hours ago (a whole 5-minute and hour bucket of the rollups), two days ago, and two hours ahead.
  const acme = [now - 1_000, now - 3 * HOUR - 60_000, now - 2 * DAY - 7 * HOUR, now + 2 * HOUR]
  const globex = [now - 30_000, now - 5 * DAY]
  const calls: CallRecord[] = [
    ...acme.map((ts) => makeCall({ ...base, ts })),
    ...globex.map((ts) => makeCall({ ...base, ts, tenant: 'globex' })),
    makeCall({ ...base, ts: now - 2_000, model: 'gpt-4o-mini', cost_usd: 0.25, priced: true }),
    // A plan's call of a model with no price: its money is 0 whatever the price, so it is no unpriced spend.
    makeCall({ ...base, ts: now - 5_000, provider: 'anthropic', billing: 'subscription' }),
  ]
  for (const c of calls) t.server.ledger.record(c)
  expect(await t.server.ledger.flushed()).toBe(true)

  for (const tenant of [null, 'acme', 'globex', 'nobody']) {
    const stamps = tenant === null ? [...acme, ...globex] : tenant === 'acme' ? acme : tenant === 'globex' ? globex : []
    for (const range of RANGES) {
      const r = await getJson(`${t.url}/api/dashboard/timeseries?range=${range}${tenant === null ? '' : `&tenant=${tenant}`}`)
      expect(r.status).toBe(200)
      const { points, bucket_seconds } = r.body as { points: { t: string; requests: number; unpriced_requests: number }[]; bucket_seconds: number }
      const size = bucket_seconds * 1000
      const first = Date.parse(points[0].t)
      const want = points.map(() => 0)
      // A call within the range (none is near its start), or stamped ahead: in its bucket, the newest for one ahead.
      for (const ts of stamps) if (ts >= now - RANGE_MS[range]) want[Math.min(Math.floor((ts - first) / size), points.length - 1)]++
      const label = `${tenant ?? '(all)'} ${range}`
      expect(points.map((p) => p.unpriced_requests), label).toEqual(want)
      for (const p of points) expect(p.unpriced_requests, label).toBeLessThanOrEqual(p.requests)
    }
  }
  // The newest bucket holds the call stamped ahead as well as the one a moment ago.
  const day = (await getJson(`${t.url}/api/dashboard/timeseries?range=24h&tenant=acme`)).body
  expect(day.points.at(-1).unpriced_requests).toBeGreaterThanOrEqual(2)
}

describe('unpriced calls in the timeseries buckets', () => {
  it('are counted on PostgreSQL', async () => {
    await check(await h.server({ config: { timezone: 'UTC' } }))
  })

  it('are counted on SQLite', async () => {
    await check(await h.server({ url: null, config: { timezone: 'UTC' } }))
  })
})
