import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { chat, NANO_FIXTURE, replayJson, spentToday } from '../budgets/support'
import { postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

const TOKEN = 'team-token-alice-7f3c9a1e5b'
const ADMIN = 'admin-token-0123456789abcdef'
const KEY = 'sk-proj-shared-key-0000abcd'

let upstream: MockUpstream
let team: TestServer

function ingested(id: number, over: Record<string, unknown> = {}) {
  return {
    id, t: new Date(Date.now() - 1_000).toISOString(), provider: 'openai', model: 'gpt-5-nano', api_key_hash: hashKey(KEY),
    key_hint: 'sk-…abcd', tenant: '', agent: 'codex', session: 's', status: 200, streamed: false, input_tokens: 11,
    output_tokens: 228, cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0, cost_usd: 5, priced: true,
    estimated: false, latency_ms: 100, ...over,
  }
}

beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
  team = await startTestServer(
    {
      timezone: 'UTC',
      admin: { enabled: true, token: ADMIN },
      budgets: { rules: [{ api_key_pattern: '*', daily_limit_usd: 1, action: 'block' }] },
      team: { members: [{ name: 'alice', token: TOKEN }] },
    },
    upstream.url,
  )
})
afterAll(async () => {
  await team?.cleanup()
  await upstream.close()
})

describe('calls ingested on a team server', () => {
  it('are not run through its budgets, before or after a restart', async () => {
    // $10 of a member's spend with the same key, far past the team server's $1 daily block.
    const r = await postJson(`${team.url}/api/ingest`, { calls: [ingested(1), ingested(2)] }, { authorization: `Bearer ${TOKEN}` })
    expect(r.json()).toMatchObject({ accepted: 2 })
    expect(spentToday(team, KEY)).toBe(0)
    expect((await chat(team, KEY)).status).toBe(200)
    team = await team.restart()
    expect(spentToday(team, KEY)).toBeGreaterThan(0)
    expect(spentToday(team, KEY)).toBeLessThan(1)
    expect((await chat(team, KEY)).status).toBe(200)
    // ...but they are in the dashboard's totals.
    const summary = (await request(`${team.url}/api/dashboard/summary`)).json()
    expect(summary.today_requests).toBe(4)
    expect(summary.today_spend_usd).toBeGreaterThan(10)
  })

  it('keep the price their sender recorded when the team server re-prices a model', async () => {
    const r = await postJson(
      `${team.url}/api/ingest`,
      { calls: [ingested(3, { model: 'house-model-1', cost_usd: 0, priced: false })] },
      { authorization: `Bearer ${TOKEN}` },
    )
    expect(r.json()).toMatchObject({ accepted: 1 })
    const auth = { authorization: `Bearer ${ADMIN}` }
    const put = await request(`${team.url}/api/admin/prices/openai/house-model-1`, {
      method: 'PUT',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ input_mtok: 1000, output_mtok: 1000 }),
    })
    expect(put.status).toBe(200)
    const rep = await request(`${team.url}/api/admin/prices/openai/house-model-1/reprice`, { method: 'POST', headers: auth })
    expect(rep.status).toBe(200)
    expect(rep.json()).toMatchObject({ repriced: 0 })
    const exported = (await request(`${team.url}/api/dashboard/export?range=1h&member=alice`)).json().calls
    expect(exported.find((c: any) => c.model === 'house-model-1')).toMatchObject({ cost_usd: 0, priced: false })
  })
})
