import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { startOfMonth } from '../../src/main/time/zone'
import { postJson, request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A team server's `burnrate_spend_usd` is its total spend, as its dashboard, its budgets panel's
 * `overall` and its tray count it: the calls its members sent included. Builds before this one
 * read the in-memory spend alone, which leaves ingested calls out (budgets are not run on them),
 * and showed $0 while the dashboard showed the team's spend.
 */
const TOKEN = 'team-token-alice-7f3c9a1e5b'
const KEY = 'sk-proj-shared-key-0000abcd'
let team: TestServer

function ingested(id: number, ts: number, cost: number) {
  return {
    id, t: new Date(ts).toISOString(), provider: 'openai', model: 'gpt-5-nano', api_key_hash: hashKey(KEY),
    key_hint: 'sk-…abcd', tenant: '', agent: 'codex', session: 's', status: 200, streamed: false, input_tokens: 11,
    output_tokens: 228, cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0, cost_usd: cost, priced: true,
    estimated: false, latency_ms: 100,
  }
}

beforeAll(async () => {
  team = await startTestServer({ timezone: 'UTC', metrics: { enabled: true }, team: { members: [{ name: 'alice', token: TOKEN }] } })
})
afterAll(async () => {
  await team?.cleanup()
})

const gauge = (text: string, period: string) => Number(text.match(new RegExp(`^burnrate_spend_usd\\{period="${period}"\\} (\\S+)$`, 'm'))![1])

describe("a team server's burnrate_spend_usd", () => {
  it("counts its members' calls, as its summary does", async () => {
    const now = Date.now()
    const month = startOfMonth(now, 'UTC')
    // Today's calls, and one earlier this month when today is not its first day.
    const calls = [ingested(1, now - 1_000, 1.25), ingested(2, now - 2_000, 0.5)]
    if (now - month > 2 * 86_400_000) calls.push(ingested(3, month + 3_600_000, 4))
    const r = await postJson(`${team.url}/api/ingest`, { calls }, { authorization: `Bearer ${TOKEN}` })
    expect(r.json()).toMatchObject({ accepted: calls.length })
    const summary = (await request(`${team.url}/api/dashboard/summary`)).json()
    expect(summary.today_spend_usd).toBeCloseTo(1.75, 12)
    const metrics = (await request(`${team.url}/metrics`)).text
    expect(gauge(metrics, 'today')).toBeCloseTo(summary.today_spend_usd, 12)
    expect(gauge(metrics, 'month')).toBeCloseTo(summary.month_spend_usd, 12)
  })
})
