import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { untilStartReadsDone } from '../support/calls-feed'
import { useFakeDate } from '../support/fake-date'
import { fixture } from '../support/fixtures'
import { request } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'
import { NANO_COST, NANO_FIXTURE, chat } from './support'

/**
 * GET /api/dashboard/budgets on PostgreSQL, as on SQLite (windows-midnight-http, one-moment-http,
 * tenant-rule-view): an answer timed a moment before the day a call rolled the meters into gives
 * every key's windows for that day, never an exhausted_at before its window began; and a rule
 * scoped to a tenant is shown in that tenant's view, as the shared spend rows refuse its calls.
 * The machine's clock is set as the budget tests set it (test/support/fake-date.ts: Date only).
 */
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture(NANO_FIXTURE) }) })
const clock = useFakeDate()

type Win = { period: string; spent_usd: number; pct: number; exhausted_at: string | null; resets_at: string }
type Status = { api_key_hash: string | null; windows: Win[] }

async function rules(t: TestServer, query = ''): Promise<Status[]> {
  const r = await request(`${t.url}/api/dashboard/budgets${query}`)
  expect(r.status).toBe(200)
  return r.json().rules
}

describe('the budgets answer on PostgreSQL', () => {
  it('is of one day at midnight, and never exhausted before its window began', async () => {
    const A = 'sk-pgview-aaaaaaaaaaaa-0001'
    const B = 'sk-pgview-bbbbbbbbbbbb-0002'
    clock.start('2026-03-31T23:50:00Z')
    const limits = [{ api_key_pattern: 'sk-pgview-*', daily_limit_usd: NANO_COST / 2, monthly_limit_usd: NANO_COST * 1.0001, action: 'block' }]
    const t = await h.server({ config: { timezone: 'UTC', budgets: { rules: limits } } })
    // Start-up's reads of the meters done first (the first, and the one the shared rules' first load
    // asks for): the answer at 23:59:58 is read from the meters the calls below rolled on, not from
    // a rebuild by a read still under way (postgres-read-stepped-back.test.ts tests that one).
    await untilStartReadsDone(t)
    expect((await chat(t, B)).status).toBe(200)
    clock.set('2026-04-01T00:00:05Z')
    expect((await chat(t, A)).status).toBe(200)

    clock.set('2026-03-31T23:59:58Z')
    const early = await rules(t)
    const of = (hash: string) => early.find((x) => x.api_key_hash === hash)!.windows
    const start = Date.parse('2026-04-01T00:00:00Z')
    for (const w of of(hashKey(A))) {
      expect(w.spent_usd).toBe(NANO_COST)
      expect(Date.parse(w.exhausted_at!), `${w.period} exhausted_at ${w.exhausted_at}`).toBeGreaterThanOrEqual(start)
    }
    expect(of(hashKey(B)).find((w) => w.period === 'daily')).toMatchObject({ spent_usd: 0, pct: 0, exhausted_at: null, resets_at: '2026-04-02T00:00:00.000Z' })
    // As the proxy decides B's next call, in April 1st: admitted.
    clock.set('2026-04-01T00:00:06Z')
    expect((await chat(t, B)).status).toBe(200)
  }, 60_000)

  it("shows a tenant-scoped rule in the view of the tenant it refuses", async () => {
    const KEY = 'sk-pgten-aaaaaaaaaaaa-0001'
    const limits = [{ api_key_pattern: 'sk-pgten-*', tenant: 'acme', daily_limit_usd: NANO_COST / 2, action: 'block' }]
    const t = await h.server({ config: { timezone: 'UTC', budgets: { rules: limits } } })
    expect((await chat(t, KEY, {}, { 'x-burnrate-tenant': 'acme' })).status).toBe(200)
    expect((await chat(t, KEY, {}, { 'x-burnrate-tenant': 'acme' })).status).toBe(429)
    expect((await chat(t, KEY, {}, { 'x-burnrate-tenant': 'beta' })).status).toBe(200)
    const acme = await rules(t, '?tenant=acme')
    expect(acme.map((s) => [s.api_key_hash, s.windows.map((w) => [w.period, w.spent_usd])])).toEqual([[hashKey(KEY), [['daily', NANO_COST]]]])
    const beta = await rules(t, '?tenant=beta')
    expect(beta.map((s) => [s.api_key_hash, s.windows.map((w) => [w.period, w.spent_usd])])).toEqual([[null, [['daily', 0]]]])
  }, 60_000)
})
