import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CALL_FIELDS, GROUP_BYS, RANGES } from '../../src/shared/api'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { getJson, makeCall } from './seed'

let t: TestServer
const now = Date.now()

beforeAll(async () => {
  t = await startTestServer({ timezone: 'UTC' })
  const ledger = t.server.ledger
  ledger.record(makeCall({ ts: now - 60_000, model: 'gpt-4o', cost_usd: 0.5, tenant: 'acme', agent: 'codex', session: 's1', latency_ms: 100 }))
  ledger.record(makeCall({ ts: now - 30_000, model: 'gpt-4o', cost_usd: 0.25, tenant: 'acme', agent: 'codex', session: 's1', latency_ms: 300 }))
  ledger.record(makeCall({ ts: now - 2 * 3_600_000, provider: 'anthropic', model: 'claude-sonnet-4-5', cost_usd: 1.5, agent: 'claude-code', session: 's2', latency_ms: 200 }))
  ledger.record(makeCall({ ts: now - 10_000, status: 429, cost_usd: 0, latency_ms: 1 }))
  ledger.record(makeCall({ ts: now - 5_000, status: 502, cost_usd: 0, latency_ms: 2, error: 'upstream_unreachable' }))
})
afterAll(async () => {
  await t.cleanup()
})

const api = (path: string) => getJson(`${t.url}/api/dashboard/${path}`)

describe('shapes', () => {
  it('summary', async () => {
    const { status, body, reply } = await api('summary')
    expect(status).toBe(200)
    expect(reply.headers['content-type']).toMatch(/^application\/json/)
    expect(Object.keys(body).sort()).toEqual(
      [
        'active_sessions', 'avg_cost_per_request_usd', 'error_rate', 'month_spend_usd', 'today_requests', 'today_billed_requests', 'today_spend_usd',
        'today_plan_value_usd', 'month_plan_value_usd', 'timezone', 'today_unpriced_requests', 'month_unpriced_requests',
      ].sort(),
    )
    expect(body.active_sessions).toBe(1) // s1 (last call 30 s ago); s2 was 2 h ago
    // Every figure a number; the zone its today and month begin in, named.
    const { timezone, ...figures } = body
    expect(typeof timezone).toBe('string')
    for (const v of Object.values(figures)) expect(typeof v).toBe('number')
  })

  it('timeseries: contiguous, zero-filled, oldest first, 30..400 buckets for every range', async () => {
    for (const range of RANGES) {
      const { status, body } = await api(`timeseries?range=${range}`)
      expect(status).toBe(200)
      expect(body.range).toBe(range)
      expect(body.points.length).toBeGreaterThanOrEqual(30)
      expect(body.points.length).toBeLessThanOrEqual(400)
      const ts = body.points.map((p: any) => Date.parse(p.t))
      for (let i = 1; i < ts.length; i++) expect(ts[i] - ts[i - 1]).toBe(body.bucket_seconds * 1000)
      for (const p of body.points) {
        expect(p.t).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
        expect(Object.keys(p).sort()).toEqual(['cost_usd', 'input_tokens', 'output_tokens', 'requests', 't', 'unpriced_requests'])
      }
      // The last bucket holds now.
      expect(Date.now() - ts[ts.length - 1]).toBeLessThan(body.bucket_seconds * 1000 + 5_000)
    }
    const def = await api('timeseries')
    expect(def.body.range).toBe('24h')
    expect(def.body.points.reduce((s: number, p: any) => s + p.requests, 0)).toBe(5)
  })

  it('costs for every grouping, costliest first; provider only when grouped by model', async () => {
    for (const g of GROUP_BYS) {
      const { status, body } = await api(`costs?group_by=${g}`)
      expect(status).toBe(200)
      expect(body.group_by).toBe(g)
      expect(body.range).toBe('30d')
      const costs = body.rows.map((r: any) => r.cost_usd)
      expect([...costs].sort((a, b) => b - a)).toEqual(costs)
      for (const r of body.rows) expect(r.provider === null).toBe(g !== 'model')
      expect(body.rows.reduce((s: number, r: any) => s + r.requests, 0)).toBe(5)
    }
    const byModel = (await api('costs')).body
    expect(byModel.group_by).toBe('model')
    expect(byModel.rows[0]).toEqual({
      key: 'claude-sonnet-4-5',
      provider: 'anthropic',
      requests: 1,
      input_tokens: 100,
      output_tokens: 50,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      cost_usd: 1.5,
      unpriced_requests: 0,
    })
    const byKey = (await api('costs?group_by=api_key')).body
    expect(byKey.rows[0].key_hint).toBe('sk-…0000')
  })

  it('sessions: named sessions of the last 24 h, most recent first, active under 5 minutes', async () => {
    const { body } = await api('sessions')
    expect(body.sessions.map((s: any) => [s.session, s.status])).toEqual([
      ['s1', 'active'],
      ['s2', 'idle'],
    ])
    expect(body.sessions[0]).toEqual({
      session: 's1',
      agent: 'codex',
      tenant: 'acme',
      started_at: new Date(now - 60_000).toISOString(),
      last_seen_at: new Date(now - 30_000).toISOString(),
      requests: 2,
      cost_usd: 0.75,
      unpriced_requests: 0,
      pruned_requests: 0,
      status: 'active',
    })
  })

  it('expensive: costliest first, 10 by default, limit 1..100', async () => {
    const { body } = await api('expensive')
    expect(body.requests.map((c: any) => c.cost_usd)).toEqual([1.5, 0.5, 0.25, 0, 0])
    expect(Object.keys(body.requests[0])).toEqual([...CALL_FIELDS])
    expect(body.requests[0]).toMatchObject({ provider: 'anthropic', streamed: false, priced: true, estimated: false, status: 200 })
    // A record that leaves the second-wave fields out gets their defaults.
    expect(body.requests[0]).toMatchObject({ response_id: '', source: 'proxy', billing: 'api', project: '', member: '' })
    expect(Number.isInteger(body.requests[0].id)).toBe(true)
    expect((await api('expensive?limit=1')).body.requests).toHaveLength(1)
    expect((await api('expensive?limit=100')).body.requests).toHaveLength(5)
  })

  it('stats', async () => {
    const { body } = await api('stats')
    expect(body).toEqual({
      total_requests: 5,
      errors_429: 1,
      errors_5xx: 1,
      error_rate: 2 / 5,
      avg_latency_ms: (100 + 300 + 200 + 1 + 2) / 5,
      p50_latency_ms: 100,
      p95_latency_ms: 300,
      billed_requests: 5,
      avg_cost_per_request_usd: 2.25 / 5,
    })
    expect((await api('stats?range=30m')).body.total_requests).toBe(4)
  })

  it('report: a session, model, agent or project report lists its costliest `limit` rows (100 by default) and counts them all', async () => {
    const all = await api('report?kind=session')
    expect(all.status).toBe(200)
    // s2 (1.5), s1 (0.75), and the calls without a session.
    expect(all.body.rows.map((r: any) => [r.key, r.cost_usd])).toEqual([['s2', 1.5], ['s1', 0.75], ['', 0]])
    expect(all.body.total_rows).toBe(3)
    const one = await api('report?kind=session&limit=1')
    expect(one.body.rows).toEqual([all.body.rows[0]])
    expect(one.body.total_rows).toBe(3)
    // The totals are of every session, not only those listed.
    expect(one.body.totals).toEqual(all.body.totals)
    expect(one.body.totals.requests).toBe(5)
    const models = await api('report?kind=model&limit=1')
    expect(models.body.rows.map((r: any) => r.key)).toEqual(['claude-sonnet-4-5'])
    expect(models.body.total_rows).toBe(3)
    const daily = await api('report?kind=daily')
    expect(daily.body.total_rows).toBe(daily.body.rows.length)
  })

  it('export: JSON by default, oldest first, as a download', async () => {
    const { body, reply } = await api('export')
    expect(reply.headers['content-type']).toMatch(/^application\/json/)
    expect(reply.headers['content-disposition']).toBe('attachment; filename="burnrate-30d.json"')
    expect(body.calls.map((c: any) => c.cost_usd)).toEqual([1.5, 0.5, 0.25, 0, 0])
    const csv = await request(`${t.url}/api/dashboard/export?format=csv&range=1h`)
    expect(csv.status).toBe(200)
    expect(csv.headers['content-type']).toMatch(/^text\/csv/)
    expect(csv.headers['content-disposition']).toBe('attachment; filename="burnrate-1h.csv"')
    expect(csv.text.split('\r\n')[0]).toBe(CALL_FIELDS.join(','))
    expect(csv.text.split('\r\n')).toHaveLength(1 + 4 + 1)
  })

  it('plans, alerts and prices are the whole server\'s: tenant is accepted and answers the same', async () => {
    for (const path of ['plans', 'alerts', 'prices']) {
      const all = await api(path)
      expect(all.status).toBe(200)
      for (const tenant of ['acme', 'nobody', '']) expect(await api(`${path}?tenant=${tenant}`)).toMatchObject({ status: 200, body: all.body })
    }
  })

  it('unknown parameters are ignored', async () => {
    expect((await api('summary?foo=bar&range=nonsense')).status).toBe(200)
    expect((await api('costs?colour=blue')).status).toBe(200)
  })
})

describe('bad parameters: 400 invalid_request naming the parameter and the accepted values', () => {
  const cases: [string, string, string[]][] = [
    ['timeseries?range=2h', 'range', ['30m', '1h', '6h', '24h', '7d', '30d']],
    ['costs?range=1y', 'range', RANGES as string[]],
    ['costs?group_by=user', 'group_by', GROUP_BYS as string[]],
    ['expensive?range=', 'range', RANGES as string[]],
    ['expensive?limit=0', 'limit', ['1', '100']],
    ['expensive?limit=101', 'limit', ['1', '100']],
    ['expensive?limit=ten', 'limit', ['1', '100']],
    ['expensive?limit=1.5', 'limit', ['1', '100']],
    ['report?kind=session&limit=0', 'limit', ['1', '1000000']],
    ['report?kind=agent&limit=1000001', 'limit', ['1', '1000000']],
    ['report?kind=daily&limit=10', 'limit', ['session', 'model', 'agent', 'project']],
    ['stats?range=24H', 'range', RANGES as string[]],
    ['export?format=xlsx', 'format', ['csv', 'json']],
    ['export?format=csv&range=90d', 'range', RANGES as string[]],
    ['timeseries?range=1h&range=24h', 'range', RANGES as string[]],
    ['costs?group_by=model&group_by=model', 'group_by', GROUP_BYS as string[]],
    ['summary?tenant=a&tenant=b', 'tenant', []],
    ['plans?tenant=a&tenant=b', 'tenant', []],
    ['alerts?tenant=a&tenant=b', 'tenant', []],
    ['prices?tenant=a&tenant=b', 'tenant', []],
  ]
  for (const [path, param, accepted] of cases) {
    it(path, async () => {
      const { status, body, reply } = await api(path)
      expect(status).toBe(400)
      expect(reply.headers['content-type']).toMatch(/^application\/json/)
      expect(body.error.type).toBe('invalid_request')
      expect(body.error.param).toBe(param)
      expect(body.error.message).toContain(param)
      for (const a of accepted) expect(body.error.message).toContain(a)
    })
  }

  it('an unknown dashboard path is a 404 not_found', async () => {
    const { status, body } = await api('nope')
    expect(status).toBe(404)
    expect(body.error.type).toBe('not_found')
  })
})

describe('dashboard.enabled: false', () => {
  it('answers every dashboard endpoint with 404 not_found, and still keeps the rollups', async () => {
    const off = await startTestServer({ dashboard: { enabled: false } })
    try {
      off.server.ledger.record(makeCall({ cost_usd: 2 }))
      for (const p of ['summary', 'timeseries', 'costs', 'sessions', 'expensive', 'stats', 'export', 'export?format=csv']) {
        const { status, body } = await getJson(`${off.url}/api/dashboard/${p}`)
        expect(status).toBe(404)
        expect(body.error.type).toBe('not_found')
      }
      // Turned on later, the calls recorded meanwhile are there.
      const on = await (async () => {
        await off.stop()
        const { writeFileSync } = await import('node:fs')
        writeFileSync(off.configFile, 'server: {host: 127.0.0.1, port: 0}\ndashboard: {enabled: true}\n')
        const { loadConfig } = await import('../../src/main/config/load')
        const { createBurnrate } = await import('../../src/main/server/server')
        const { silentLogger } = await import('../../src/main/log')
        const s = createBurnrate(loadConfig({ config: off.configFile, dataDir: off.dir }, {}), { log: silentLogger })
        return { s, url: await s.listen() }
      })()
      try {
        expect((await getJson(`${on.url}/api/dashboard/summary`)).body.today_spend_usd).toBe(2)
        expect((await getJson(`${on.url}/api/dashboard/costs`)).body.rows[0].cost_usd).toBe(2)
      } finally {
        await on.s.close()
      }
    } finally {
      await off.cleanup()
    }
  })
})
