import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/** `GET /api/dashboard/report` answers as src/shared/api.md says. */
let s: TestServer

beforeAll(async () => {
  s = await startTestServer({})
})
afterAll(async () => {
  await s.cleanup()
})

describe('GET /api/dashboard/report', () => {
  it('answers {kind, since, until, timezone, tenant, rows, total_rows, totals}', async () => {
    const res = await request(`${s.url}/api/dashboard/report?kind=model&since=2026-11-01&until=2026-11-30&limit=5`)
    expect(res.status).toBe(200)
    const body = res.json()
    expect(Object.keys(body).sort()).toEqual(['kind', 'rows', 'since', 'tenant', 'timezone', 'total_rows', 'totals', 'until'])
    expect(body.kind).toBe('model')
    expect(body.since).toMatch(/Z$/)
    expect(body.rows).toEqual([])
    expect(Object.keys(body.totals).sort()).toEqual(
      ['cache_read_tokens', 'cache_write_tokens', 'cost_usd', 'imported', 'input_tokens', 'output_tokens', 'requests', 'unpriced_requests'],
    )
    const daily = (await request(`${s.url}/api/dashboard/report`)).json()
    expect(daily.kind).toBe('daily')
    expect(daily.since).toBeNull()
  })

  it('refuses a bad kind, and limit on a daily, weekly or monthly report (400 naming the parameter)', async () => {
    for (const [q, param] of [['kind=yearly', 'kind'], ['kind=daily&limit=5', 'limit'], ['kind=model&limit=0', 'limit'], ['since=2026-02-29', 'since']]) {
      const res = await request(`${s.url}/api/dashboard/report?${q}`)
      expect(res.status, q).toBe(400)
      expect(res.json().error.type).toBe('invalid_request')
      expect(res.json().error.param).toBe(param)
    }
  })
})
