import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { GROUP_BYS, RANGES } from '../../src/shared/api'
import { type TestServer, startTestServer } from '../support/server'
import { getJson, variedCalls } from '../dashboard/seed'

/**
 * The same money through every view that shows it: for every range and tenant filter, the
 * timeseries, each breakdown, stats, the report (its totals and rows), the summary's today and
 * month figures and the session rows all agree with the export's calls, on a varied ledger in a
 * timezone off the hour (UTC+5:45) with plan calls mixed in (money only where it says spend).
 */
let t: TestServer
const now = Date.now()
const TZ = 'Asia/Kathmandu'
const calls = variedCalls(3000, now, 45, 7).map((c, i) => ({ ...c, billing: (i % 5 === 0 ? 'subscription' : 'api') as any, cost_usd: i % 5 === 0 ? 0.02 + (i % 7) * 0.001 : c.cost_usd }))

beforeAll(async () => {
  t = await startTestServer({ timezone: TZ })
  for (const c of calls) t.server.ledger.record(c)
}, 60_000)
afterAll(async () => { await t.cleanup() })

const api = async (p: string) => (await getJson(`${t.url}/api/dashboard/${p}`)).body
const sum = (xs: any[], f: (x: any) => number) => xs.reduce((s, x) => s + f(x), 0)
const close = (a: number, b: number, what: string) => expect(Math.abs(a - b), `${what}: ${a} vs ${b}`).toBeLessThan(1e-6)

describe('cross-endpoint', () => {
  for (const tenant of [null, 'acme', '']) {
    const tq = tenant === null ? '' : `&tenant=${tenant}`
    it(`costs/timeseries/export agree, tenant=${tenant}`, async () => {
      for (const range of RANGES) {
        const exp = (await api(`export?range=${range}${tq}`)).calls
        const money = sum(exp.filter((c: any) => c.billing !== 'subscription'), (c) => c.cost_usd)
        const ts = await api(`timeseries?range=${range}${tq}`)
        close(sum(ts.points, (p) => p.cost_usd), money, `timeseries ${range}`)
        expect(sum(ts.points, (p) => p.requests)).toBe(exp.length)
        for (const g of GROUP_BYS) {
          const c = await api(`costs?group_by=${g}&range=${range}&limit=1000${tq}`)
          close(sum(c.rows, (r) => r.cost_usd), money, `costs ${g} ${range}`)
          expect(sum(c.rows, (r) => r.requests), `costs ${g} ${range} requests`).toBe(exp.length)
          expect(sum(c.rows, (r) => r.input_tokens)).toBe(sum(exp, (x) => x.input_tokens))
        }
        const st = await api(`stats?range=${range}${tq}`)
        expect(st.total_requests).toBe(exp.length)
      }
    }, 60_000)
    it(`summary and report agree with export, tenant=${tenant}`, async () => {
      const s = await api(`summary?${tq}`)
      const all = (await api(`export?since=2000-01-01${tq}`)).calls
      // report over whole range
      for (const kind of ['daily', 'weekly', 'monthly', 'model', 'agent', 'project', 'session']) {
        const lim = ['daily', 'weekly', 'monthly'].includes(kind) ? '' : '&limit=1000000'
        const r = await api(`report?kind=${kind}${lim}${tq}`)
        close(r.totals.cost_usd, sum(all, (c) => c.cost_usd), `report ${kind}`)
        expect(r.totals.requests, `report ${kind} requests`).toBe(all.length)
        close(sum(r.rows, (x: any) => x.cost_usd), r.totals.cost_usd, `report rows ${kind}`)
      }
      // report with since/until (days in TZ)
      const fmt = (ms: number) => new Intl.DateTimeFormat('en-CA', { timeZone: TZ, year: 'numeric', month: '2-digit', day: '2-digit' }).format(ms)
      const since = fmt(now - 20 * 86_400_000), until = fmt(now - 3 * 86_400_000)
      const part = (await api(`export?since=${since}&until=${until}${tq}`)).calls
      for (const kind of ['daily', 'monthly', 'model', 'agent', 'project', 'session']) {
        const lim = ['daily', 'weekly', 'monthly'].includes(kind) ? '' : '&limit=1000000'
        const r = await api(`report?kind=${kind}&since=${since}&until=${until}${lim}${tq}`)
        close(r.totals.cost_usd, sum(part, (c) => c.cost_usd), `report ${kind} ${since}..${until}`)
        expect(r.totals.requests).toBe(part.length)
      }
      // summary today/month = report daily/monthly minus plan
      const today = fmt(now)
      const td = (await api(`export?since=${today}${tq}`)).calls
      close(s.today_spend_usd, sum(td.filter((c: any) => c.billing !== 'subscription'), (c) => c.cost_usd), 'today spend')
      close(s.today_plan_value_usd, sum(td.filter((c: any) => c.billing === 'subscription'), (c) => c.cost_usd), 'today plan')
      expect(s.today_requests).toBe(td.length)
      const ms = today.slice(0, 8) + '01'
      const mo = (await api(`export?since=${ms}${tq}`)).calls
      close(s.month_spend_usd, sum(mo.filter((c: any) => c.billing !== 'subscription'), (c) => c.cost_usd), 'month spend')
      close(s.month_plan_value_usd, sum(mo.filter((c: any) => c.billing === 'subscription'), (c) => c.cost_usd), 'month plan')
      // sessions: cost of each listed session = its calls' money, whole session
      const ss = (await api(`sessions?limit=1000${tq}`)).sessions
      for (const x of ss) {
        const mine = all.filter((c: any) => c.session === x.session && c.agent === x.agent && c.tenant === x.tenant)
        close(x.cost_usd, sum(mine.filter((c: any) => c.billing !== 'subscription'), (c) => c.cost_usd), `session ${x.session}`)
        expect(x.requests).toBe(mine.length)
      }
    }, 60_000)
  }
})
