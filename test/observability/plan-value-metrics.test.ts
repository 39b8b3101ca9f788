import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { fixtureJson } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { otlpSum, startCollector } from './support'

/**
 * A plan's call (a Claude OAuth token: `billing: subscription`) is recorded at its API-equivalent
 * value, which is not spend. The cost counters carry the call's billing (`billing` on /metrics,
 * `burnrate.billing` on OTLP), so spend is the `api` series and plan value the `subscription` ones,
 * re-priced calls included. Before, they had no such label: the README's spend queries summed plan
 * value as money, twice the dashboard's spend in this test.
 */

const UNPRICED = 'claude-plan-zeta-1' // unknown to the bundled prices: recorded unpriced, cost 0
const API_KEY = { 'x-api-key': 'sk-ant-api03-money-key-bbbbbbbbbbbb' }
const PLAN = { authorization: 'Bearer sk-ant-oat01-plan-token-aaaaaaaaaaaaaaaa', 'anthropic-beta': 'oauth-2025-04-20' }

let upstream: MockUpstream
let collector: Awaited<ReturnType<typeof startCollector>>
let t: TestServer

beforeAll(async () => {
  // The recorded Messages answer (12 input, 29 output tokens), for the model asked for.
  upstream = await startMockUpstream((req) => {
    const body = { ...fixtureJson('anthropic/messages-nonstream-basic.json'), model: JSON.parse(req.body.toString()).model }
    return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }
  })
  collector = await startCollector()
  t = await startTestServer({ ...ADMIN_CONFIG, timezone: 'UTC', metrics: { enabled: true }, otel: { endpoint: collector.url, interval_ms: 200 } }, upstream.url)
})
afterAll(async () => {
  await t?.cleanup()
  await upstream?.close()
  await collector?.close()
})

const send = (model: string, auth: Record<string, string>) =>
  postJson(`${t.url}/v1/messages`, { model, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, { ...auth, 'anthropic-version': '2023-06-01' })

/** Prometheus: the sum of `name`'s samples with `billing` (0 when it has none). */
async function prom(name: string, billing: string): Promise<number> {
  const text = (await request(`${t.url}/metrics`)).text
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && l.includes(`billing="${billing}"`))
    .reduce((s, l) => s + Number(l.split(' ').at(-1)), 0)
}

/** What each billing's counters say a total is: the cost counter minus the reductions counter. */
async function promNet(billing: string): Promise<number> {
  return (await prom('burnrate_cost_usd_total', billing)) - (await prom('burnrate_cost_reductions_usd_total', billing))
}

const otlpNet = (billing: string) =>
  (otlpSum(collector.metrics, 'gen_ai.usage.cost', { 'burnrate.billing': billing }) ?? 0) -
  (otlpSum(collector.metrics, 'burnrate.cost.reductions', { 'burnrate.billing': billing }) ?? 0)

const near = (a: number, b: number) => Math.abs(a - b) <= 1e-12

async function summary(): Promise<{ spend: number; plan: number }> {
  const s = (await request(`${t.url}/api/dashboard/summary`)).json()
  return { spend: s.today_spend_usd, plan: s.today_plan_value_usd }
}

describe('the cost counters keep spend and plan value apart by billing', () => {
  it('billing="api" is the dashboard spend and billing="subscription" its plan value, on /metrics and OTLP, re-priced calls included', async () => {
    expect((await send('claude-sonnet-4-5', API_KEY)).status).toBe(200)
    expect((await send('claude-sonnet-4-5', PLAN)).status).toBe(200)
    expect((await send(UNPRICED, PLAN)).status).toBe(200)
    await t.server.ledger.flushed()
    const first = await summary()
    expect(first.spend).toBeGreaterThan(0)
    expect(first.plan).toBeCloseTo(first.spend, 12) // the same call, once on a plan

    expect(near(await promNet('api'), first.spend)).toBe(true)
    expect(near(await promNet('subscription'), first.plan)).toBe(true)
    const text = (await request(`${t.url}/metrics`)).text
    const gauge = Number(text.split('\n').find((l) => l.startsWith('burnrate_spend_usd{period="today"}'))!.split(' ').at(-1))
    expect(near(gauge, await promNet('api'))).toBe(true)
    await eventually(() => near(otlpNet('api'), first.spend) && near(otlpNet('subscription'), first.plan), 10_000)

    // The unpriced plan call given a price: its rise is plan value, not spend.
    expect((await admin(t.url, 'PUT', `/prices/anthropic/${UNPRICED}`, { body: { input_mtok: 3, output_mtok: 15 } })).status).toBe(200)
    expect((await admin(t.url, 'POST', `/prices/anthropic/${UNPRICED}/reprice`)).json()).toMatchObject({ repriced: 1 })
    const second = await summary()
    expect(second.spend).toBe(first.spend)
    expect(second.plan).toBeCloseTo(first.plan + 12 * 3e-6 + 29 * 15e-6, 12)
    expect(near(await promNet('api'), second.spend)).toBe(true)
    expect(near(await promNet('subscription'), second.plan)).toBe(true)

    // Cheaper after all: the fall is a plan value reduction.
    expect((await admin(t.url, 'PUT', `/prices/anthropic/${UNPRICED}`, { body: { input_mtok: 1, output_mtok: 5 } })).status).toBe(200)
    expect((await admin(t.url, 'POST', `/prices/anthropic/${UNPRICED}/reprice?all=true`)).json()).toMatchObject({ repriced: 1 })
    const third = await summary()
    expect(await prom('burnrate_cost_reductions_usd_total', 'api')).toBe(0)
    expect(await prom('burnrate_cost_reductions_usd_total', 'subscription')).toBeGreaterThan(0)
    expect(near(await promNet('api'), third.spend)).toBe(true)
    expect(near(await promNet('subscription'), third.plan)).toBe(true)
    await eventually(() => near(otlpNet('api'), third.spend) && near(otlpNet('subscription'), third.plan), 10_000)

    // Each span says which its cost is.
    const billings = await eventually(() => {
      const spans = collector.traces.flatMap((b) => b.resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans)))
      const values = spans.map((s: any) => s.attributes.find((a: any) => a.key === 'burnrate.billing')?.value.stringValue)
      return values.length === 3 ? values.sort() : null
    }, 10_000)
    expect(billings).toEqual(['api', 'subscription', 'subscription'])
  })
})
