import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startOfDay, startOfMonth } from '../../src/main/time/zone'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { getJson, keyHash, makeCall } from '../dashboard/seed'
import { ADMIN_CONFIG, admin } from '../admin/support'

/**
 * Today's and this month's spend as the summary, the API-key listing, the budget listing (overall
 * and per rule) and the /metrics gauge show it, against the export's calls: calls a minute either
 * side of local midnight and of the month's start, both billings, client aborts, and calls
 * re-priced through the admin API; live and after a restart (which loads the meters from SQL).
 */
const TZ = 'America/Los_Angeles'
let t: TestServer
const now = Date.now()
const day = startOfDay(now, TZ)
const month = startOfMonth(now, TZ)
const KEYS = ['sk-alpha-000000001', 'sk-beta-0000000002', 'sk-gamma-000000003']
const MODEL = 'my-private-model'

function seed(t: TestServer) {
  const L = t.server.ledger
  let i = 0
  const times = [month - 60_000, month + 60_000, day - 60_000, day + 60_000, now - 5_000, now - 40 * 86_400_000, month - 3 * 86_400_000]
  for (const ts of times) for (const k of KEYS) for (const billing of ['api', 'subscription'] as const) {
    i++
    const h = keyHash(k)
    L.record(makeCall({ ts, api_key_hash: h, key_hint: k.slice(0, 3) + '…' + k.slice(-4), billing, cost_usd: 0.01 * i, tenant: i % 2 ? 'acme' : '', session: `s${i % 3}`, agent: 'codex' }))
    L.record(makeCall({ ts: ts + 1, api_key_hash: h, billing, status: 499, cost_usd: 0.003, error: 'client_aborted' }))
    // unpriced, re-priced below
    L.record(makeCall({ ts: ts + 2, api_key_hash: h, billing, model: MODEL, priced: false, cost_usd: 0, input_tokens: 1_000_000, output_tokens: 0 }))
  }
}

beforeAll(async () => {
  t = await startTestServer({ ...ADMIN_CONFIG, metrics: { enabled: true }, timezone: TZ, budgets: { rules: [{ api_key_pattern: '*', daily_limit_usd: 1000, monthly_limit_usd: 1000, action: 'warn' }] } })
  seed(t)
  await t.server.ledger.flush()
  expect((await admin(t.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 2, output_mtok: 2 } })).status).toBe(200)
  const rep = await admin(t.url, 'POST', `/prices/openai/${MODEL}/reprice`)
  expect(rep.json().repriced).toBeGreaterThan(0)
}, 60_000)
afterAll(async () => { await t.cleanup() })

const sum = (xs: any[], f: (x: any) => number) => xs.reduce((s, x) => s + f(x), 0)
const close = (a: number, b: number, what: string) => expect(Math.abs(a - b), `${what}: ${a} vs ${b}`).toBeLessThan(1e-9)

async function views(t: TestServer) {
  const s = (await getJson(`${t.url}/api/dashboard/summary`)).body
  const all = (await getJson(`${t.url}/api/dashboard/export?since=2000-01-01`)).body.calls
  const money = (xs: any[]) => sum(xs.filter((c) => c.billing !== 'subscription'), (c) => c.cost_usd)
  const tday = all.filter((c: any) => Date.parse(c.t) >= day), tmon = all.filter((c: any) => Date.parse(c.t) >= month)
  const keys = (await admin(t.url, 'GET', '/api-keys')).json() as any[]
  const bud = (await getJson(`${t.url}/api/dashboard/budgets`)).body
  const metrics = (await request(`${t.url}/metrics`)).text
  const gauge = (p: string) => Number(metrics.match(new RegExp(`burnrate_spend_usd\\{period="${p}"\\} (\\S+)`))![1])
  return { s, all, money, tday, tmon, keys, bud, gauge }
}

function check(v: Awaited<ReturnType<typeof views>>, label: string) {
  close(v.s.today_spend_usd, v.money(v.tday), `${label} summary today`)
  close(v.s.month_spend_usd, v.money(v.tmon), `${label} summary month`)
  close(sum(v.keys, (k) => k.spend_today_usd), v.money(v.tday), `${label} api-keys today`)
  close(sum(v.keys, (k) => k.spend_month_usd), v.money(v.tmon), `${label} api-keys month`)
  for (const k of v.keys) {
    const mine = v.tmon.filter((c: any) => c.api_key_hash === k.api_key_hash)
    close(k.spend_month_usd, v.money(mine), `${label} key ${k.key_hint} month`)
    expect(k.requests_month, `${label} key ${k.key_hint} requests_month`).toBe(mine.length)
  }
  close(v.gauge('today'), v.money(v.tday), `${label} metrics today`)
  close(v.gauge('month'), v.money(v.tmon), `${label} metrics month`)
  const od = v.bud.overall.find((o: any) => o.period === 'daily'), om = v.bud.overall.find((o: any) => o.period === 'monthly')
  close(od.spent_usd, v.money(v.tday), `${label} budgets overall daily`)
  close(om.spent_usd, v.money(v.tmon), `${label} budgets overall monthly`)
  for (const r of v.bud.rules) {
    const mine = (xs: any[]) => xs.filter((c: any) => c.api_key_hash === r.api_key_hash)
    close(r.windows.find((w: any) => w.period === 'daily').spent_usd, v.money(mine(v.tday)), `${label} rule daily ${r.key_hint}`)
    close(r.windows.find((w: any) => w.period === 'monthly').spent_usd, v.money(mine(v.tmon)), `${label} rule monthly ${r.key_hint}`)
  }
}

describe('spend views agree', () => {
  it('live', async () => check(await views(t), 'live'))
  it('after restart', async () => {
    t = await t.restart()
    check(await views(t), 'restart')
  })
})
