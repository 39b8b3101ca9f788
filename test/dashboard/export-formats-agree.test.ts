import { afterAll, beforeAll, expect, it } from 'vitest'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { getJson, variedCalls } from '../dashboard/seed'

let t: TestServer
const now = Date.now()
beforeAll(async () => {
  t = await startTestServer({ timezone: 'Asia/Kathmandu' })
  for (const c of variedCalls(800, now, 10, 3)) t.server.ledger.record({ ...c, billing: c.input_tokens % 4 === 0 ? 'subscription' : 'api' })
})
afterAll(async () => { await t.cleanup() })

it('the CSV and JSON exports carry the same calls and money, and a weekly report the same total', async () => {
  const json = (await getJson(`${t.url}/api/dashboard/export?range=7d`)).body.calls
  const csv = (await request(`${t.url}/api/dashboard/export?range=7d&format=csv`)).text.trim().split('\n')
  const head = csv[0].split(',')
  const ci = head.indexOf('cost_usd')
  expect(csv.length - 1).toBe(json.length)
  const s1 = json.reduce((s: number, c: any) => s + c.cost_usd, 0)
  const s2 = csv.slice(1).reduce((s, l) => s + Number(l.split(',')[ci]), 0)
  expect(Math.abs(s1 - s2)).toBeLessThan(1e-9)
  // A week of local days ending yesterday, in the server's timezone.
  const day = (ms: number) => new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Kathmandu', year: 'numeric', month: '2-digit', day: '2-digit' }).format(ms)
  const since = day(now - 7 * 86_400_000)
  const until = day(now - 86_400_000)
  const part = (await getJson(`${t.url}/api/dashboard/export?since=${since}&until=${until}`)).body.calls
  expect(part.length).toBeGreaterThan(0)
  const r = (await getJson(`${t.url}/api/dashboard/report?kind=weekly&since=${since}&until=${until}`)).body
  expect(Math.abs(r.totals.cost_usd - part.reduce((s: number, c: any) => s + c.cost_usd, 0))).toBeLessThan(1e-9)
  expect(r.totals.requests).toBe(part.length)
})
