import { afterAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { NANO_COST, NANO_FIXTURE, chat, replayJson } from './support'

/**
 * GET /api/dashboard/budgets?tenant=<t> and a rule scoped to a tenant (README: Budgets, `tenant`),
 * through a real server (SQLite file): the rule counts and decides only that tenant's calls of the
 * key, so it is that tenant's view that shows the key's row, whichever tenant the key's last call
 * was. Filtered by the key's last call, acme's view showed the acme rule as no key's ($0) while the
 * proxy refused acme's calls under it, and beta's showed it blocked while beta's calls went through.
 */
const KEY = 'sk-tenview-aaaaaaaaaaaa-0001'
let upstream: MockUpstream | undefined
let t: TestServer | undefined

afterAll(async () => {
  await t?.cleanup()
  await upstream?.close()
})

type Status = { rule: { tenant: string | null }; api_key_hash: string | null; windows: { period: string; spent_usd: number; pct: number }[] }

async function view(tenant: string): Promise<Status[]> {
  const r = await request(`${t!.url}/api/dashboard/budgets?tenant=${tenant}`)
  expect(r.status).toBe(200)
  return r.json().rules
}

describe('a tenant-scoped rule in a tenant view', () => {
  it("is shown, with the key's spend under it, in the view of the tenant it decides", async () => {
    upstream = await startMockUpstream()
    replayJson(upstream, NANO_FIXTURE)
    const rules = [{ api_key_pattern: 'sk-tenview-*', tenant: 'acme', daily_limit_usd: NANO_COST / 2, action: 'block' }]
    t = await startTestServer({ timezone: 'UTC', budgets: { rules } }, upstream.url)
    expect((await chat(t, KEY, {}, { 'x-burnrate-tenant': 'acme' })).status).toBe(200)
    // beta's calls are not the rule's: admitted; acme's are refused, its limit reached.
    expect((await chat(t, KEY, {}, { 'x-burnrate-tenant': 'beta' })).status).toBe(200)
    expect((await chat(t, KEY, {}, { 'x-burnrate-tenant': 'acme' })).status).toBe(429)
    expect((await chat(t, KEY, {}, { 'x-burnrate-tenant': 'beta' })).status).toBe(200)

    const acme = await view('acme')
    expect(acme).toHaveLength(1)
    expect(acme[0].api_key_hash).toBe(hashKey(KEY))
    expect(acme[0].windows.map((w) => [w.period, w.spent_usd, w.pct])).toEqual([['daily', NANO_COST, 2]])
    // beta's calls are decided by no rule: its view has the rule as no key of beta's uses it.
    const beta = await view('beta')
    expect(beta).toHaveLength(1)
    expect(beta[0].api_key_hash).toBeNull()
    expect(beta[0].windows.map((w) => [w.period, w.spent_usd])).toEqual([['daily', 0]])
  })
})
