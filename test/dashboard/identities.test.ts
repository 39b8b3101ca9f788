import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { GROUP_BYS, RANGES, type Range } from '../../src/shared/api'
import { startOfDay, startOfMonth } from '../../src/main/time/zone'
import { type TestServer, startTestServer } from '../support/server'
import { getJson, variedCalls } from './seed'

/**
 * The rollups against the calls themselves: every endpoint, for every range and tenant, agrees
 * with a plain query over `calls` (on its own connection to the real database file), and the
 * endpoints agree with one another.
 */

const RANGE_MS: Record<Range, number> = {
  '30m': 1_800_000, '1h': 3_600_000, '6h': 21_600_000, '24h': 86_400_000, '7d': 604_800_000, '30d': 2_592_000_000,
}
const TZ = 'Asia/Kolkata' // +05:30: local midnight is not on a UTC hour, so every period has raw edges
const COLUMN: Record<string, string> = {
  model: 'model', provider: 'provider', agent: 'agent', session: 'session', api_key: 'api_key_hash', tenant: 'tenant', project: 'project',
  member: 'member',
}

let t: TestServer
let raw: Database.Database

beforeAll(async () => {
  t = await startTestServer({ timezone: TZ })
  const now = Date.now()
  // Calls an hour boundary apart by a millisecond, and on 5-minute boundaries, besides the random ones.
  const calls = variedCalls(4000, now, 40, 7)
  const h = Math.floor((now - 3 * 3_600_000) / 3_600_000) * 3_600_000
  for (const ts of [h - 1, h, h + 1, h + 300_000 - 1, h + 300_000]) calls.push({ ...calls[0], ts, cost_usd: 0.125 })
  // Every tenant has calls in the shortest range too.
  calls.slice(1, 31).forEach((c, i) => calls.push({ ...c, tenant: ['', 'acme', 'globex'][i % 3], ts: now - 60_000 - i * 45_000 }))
  for (const c of calls) t.server.ledger.record(c)
  t.server.ledger.flush()
  raw = new Database(t.dbFile, { readonly: true })
})
afterAll(async () => {
  raw.close()
  await t.cleanup()
})

const api = async (path: string) => {
  const r = await getJson(`${t.url}/api/dashboard/${path}`)
  expect(r.status).toBe(200)
  return r.body
}
const q = (tenant: string | null) => (tenant === null ? '' : `&tenant=${tenant}`)
const tw = (tenant: string | null) => (tenant === null ? '' : ` AND tenant = '${tenant}'`)

function rawCalls(start: number, end: number, tenant: string | null): any[] {
  return raw.prepare(`SELECT * FROM calls WHERE ts >= ? AND ts <= ?${tw(tenant)} ORDER BY ts, id`).all(start, end)
}
const sum = (xs: any[], f: (x: any) => number) => xs.reduce((s, x) => s + f(x), 0)
const closeTo = (a: number, b: number) => expect(Math.abs(a - b)).toBeLessThan(1e-9 * Math.max(1, Math.abs(b)))

for (const tenant of [null, 'acme', 'globex']) {
  describe(`tenant ${tenant ?? '(all)'}`, () => {
    for (const range of RANGES) {
      it(`${range}: timeseries, costs (every grouping), stats, expensive and export agree with the calls`, async () => {
        const now = Date.now()
        const calls = rawCalls(now - RANGE_MS[range], now, tenant)
        const total = sum(calls, (c) => c.cost_usd)
        expect(calls.length).toBeGreaterThan(0)

        const ts = await api(`timeseries?range=${range}${q(tenant)}`)
        const size = ts.bucket_seconds * 1000
        const first = Date.parse(ts.points[0].t)
        const want = ts.points.map(() => ({ requests: 0, cost: 0, input: 0, output: 0 }))
        for (const c of calls) {
          const b = want[Math.floor((c.ts - first) / size)]
          b.requests++
          b.cost += c.cost_usd
          b.input += c.input_tokens
          b.output += c.output_tokens
        }
        ts.points.forEach((p: any, i: number) => {
          expect(p.requests).toBe(want[i].requests)
          expect(p.input_tokens).toBe(want[i].input)
          expect(p.output_tokens).toBe(want[i].output)
          closeTo(p.cost_usd, want[i].cost)
        })
        closeTo(sum(ts.points, (p) => p.cost_usd), total)

        for (const g of GROUP_BYS) {
          const costs = await api(`costs?group_by=${g}&range=${range}&limit=1000${q(tenant)}`)
          const expected = new Map<string, any>()
          for (const c of calls) {
            const k = c[COLUMN[g]] + (g === 'model' ? '\0' + c.provider : '')
            const e = expected.get(k) ?? { requests: 0, cost: 0, input: 0, output: 0, cr: 0, cw: 0 }
            e.requests++
            e.cost += c.cost_usd
            e.input += c.input_tokens
            e.output += c.output_tokens
            e.cr += c.cache_read_tokens
            e.cw += c.cache_write_tokens
            expected.set(k, e)
          }
          expect(costs.rows).toHaveLength(expected.size)
          for (const r of costs.rows) {
            const e = expected.get(r.key + (g === 'model' ? '\0' + r.provider : ''))
            expect(e, `${g} ${r.key}`).toBeDefined()
            expect([r.requests, r.input_tokens, r.output_tokens, r.cache_read_tokens, r.cache_write_tokens]).toEqual([
              e.requests, e.input, e.output, e.cr, e.cw,
            ])
            closeTo(r.cost_usd, e.cost)
          }
          // The identity: the costs table sums to the timeseries of the same range.
          closeTo(sum(costs.rows, (r) => r.cost_usd), sum(ts.points, (p) => p.cost_usd))
          expect(sum(costs.rows, (r) => r.requests)).toBe(sum(ts.points, (p) => p.requests))
        }

        const st = await api(`stats?range=${range}${q(tenant)}`)
        const lat = calls.map((c) => c.latency_ms).sort((a, b) => a - b)
        const rank = (p: number) => lat[Math.ceil(p * lat.length) - 1]
        expect(st.total_requests).toBe(calls.length)
        expect(st.errors_429).toBe(calls.filter((c) => c.status === 429).length)
        expect(st.errors_5xx).toBe(calls.filter((c) => c.status >= 500 && c.status <= 599).length)
        closeTo(st.error_rate, calls.filter((c) => c.status >= 400).length / calls.length)
        closeTo(st.avg_latency_ms, sum(calls, (c) => c.latency_ms) / calls.length)
        closeTo(st.avg_cost_per_request_usd, total / calls.length)
        expect(st.p50_latency_ms).toBe(rank(0.5))
        expect(st.p95_latency_ms).toBe(rank(0.95))

        const top = await api(`expensive?range=${range}&limit=25${q(tenant)}`)
        const wantTop = [...calls].sort((a, b) => b.cost_usd - a.cost_usd || b.id - a.id).slice(0, 25)
        expect(top.requests.map((c: any) => c.id)).toEqual(wantTop.map((c) => c.id))

        const exp = await api(`export?range=${range}${q(tenant)}`)
        expect(exp.calls.map((c: any) => c.id)).toEqual(calls.map((c) => c.id))
        closeTo(sum(exp.calls, (c) => c.cost_usd), sum(ts.points, (p) => p.cost_usd))
        if (tenant) expect(new Set(exp.calls.map((c: any) => c.tenant))).toEqual(new Set([tenant]))
      })
    }

    it('summary: today and this month (in the zone) match the calls and the export', async () => {
      const now = Date.now()
      const s = await api(`summary?${q(tenant)}`)
      const today = rawCalls(startOfDay(now, TZ), now, tenant)
      const month = rawCalls(startOfMonth(now, TZ), now, tenant)
      closeTo(s.today_spend_usd, sum(today, (c) => c.cost_usd))
      closeTo(s.month_spend_usd, sum(month, (c) => c.cost_usd))
      expect(s.today_requests).toBe(today.length)
      closeTo(s.error_rate, today.length ? today.filter((c) => c.status >= 400).length / today.length : 0)
      closeTo(s.avg_cost_per_request_usd, today.length ? sum(today, (c) => c.cost_usd) / today.length : 0)
      // The identity: today's spend is the sum of today's calls in the export.
      const exp = await api(`export?range=24h${q(tenant)}`)
      const todays = exp.calls.filter((c: any) => Date.parse(c.t) >= startOfDay(now, TZ))
      closeTo(s.today_spend_usd, sum(todays, (c) => c.cost_usd))
      expect(s.today_requests).toBe(todays.length)
      const active = raw
        .prepare(`SELECT count(*) FROM (SELECT max(ts) m FROM calls WHERE session != ''${tw(tenant)} GROUP BY session) WHERE m > ?`)
        .pluck()
        .get(now - 300_000)
      expect(s.active_sessions).toBe(active)
    })

    it('sessions: the named sessions of the last 24 h with their whole totals', async () => {
      const now = Date.now()
      const want = raw
        .prepare(
          `SELECT session, agent, tenant, min(ts) f, max(ts) l, count(*) n, total(cost_usd) c FROM calls
            WHERE session != ''${tw(tenant)} GROUP BY tenant, agent, session HAVING l > ? ORDER BY l DESC, session`,
        )
        .all(now - 86_400_000) as any[]
      const got = (await api(`sessions?limit=1000${q(tenant)}`)).sessions
      expect(want.length).toBeGreaterThan(0)
      expect(got.map((s: any) => [s.tenant, s.agent, s.session, s.requests, s.started_at, s.last_seen_at])).toEqual(
        want.map((w) => [w.tenant, w.agent, w.session, w.n, new Date(w.f).toISOString(), new Date(w.l).toISOString()]),
      )
      got.forEach((s: any, i: number) => closeTo(s.cost_usd, want[i].c))
      if (tenant) for (const s of got) expect(s.tenant).toBe(tenant)
    })
  })
}

describe('tenant isolation', () => {
  it("a tenant's answers hold none of another tenant's calls", async () => {
    const acmeIds = new Set((await api('export?tenant=acme')).calls.map((c: any) => c.id))
    const globexIds = new Set((await api('export?tenant=globex')).calls.map((c: any) => c.id))
    expect(acmeIds.size).toBeGreaterThan(0)
    expect([...acmeIds].filter((id) => globexIds.has(id))).toEqual([])
    for (const c of (await api('expensive?tenant=acme&limit=100')).requests) expect(c.tenant).toBe('acme')
    expect((await api('costs?group_by=tenant&tenant=acme')).rows.map((r: any) => r.key)).toEqual(['acme'])
    // And the tenants add up to the whole.
    const all = (await api('costs?group_by=tenant')).rows
    const whole = (await api('summary')).month_spend_usd
    const parts = await Promise.all(['acme', 'globex'].map(async (x) => (await api(`summary?tenant=${x}`)).month_spend_usd))
    const none = raw.prepare(`SELECT total(cost_usd) FROM calls WHERE tenant = '' AND ts >= ?`).pluck().get(startOfMonth(Date.now(), TZ)) as number
    closeTo(parts[0] + parts[1] + none, whole)
    expect(all.map((r: any) => r.key).sort()).toEqual(['', 'acme', 'globex'])
  })

  it('an unknown tenant sees nothing, with every list empty', async () => {
    expect(await api('summary?tenant=nobody')).toEqual({
      today_spend_usd: 0, month_spend_usd: 0, today_requests: 0, today_billed_requests: 0, avg_cost_per_request_usd: 0, active_sessions: 0, error_rate: 0,
      today_plan_value_usd: 0, month_plan_value_usd: 0, today_unpriced_requests: 0, month_unpriced_requests: 0, timezone: TZ,
    })
    expect((await api('costs?tenant=nobody')).rows).toEqual([])
    expect((await api('sessions?tenant=nobody')).sessions).toEqual([])
    expect((await api('expensive?tenant=nobody')).requests).toEqual([])
    expect((await api('export?tenant=nobody')).calls).toEqual([])
    expect((await api('timeseries?tenant=nobody')).points.every((p: any) => p.requests === 0 && p.cost_usd === 0)).toBe(true)
    expect((await api('stats?tenant=nobody')).total_requests).toBe(0)
  })
})
