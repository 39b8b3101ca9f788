import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { makeCall } from '../dashboard/seed'
import { ledgerRows } from './support'

/**
 * Each client-chosen label is bounded (200 models, 50 agents, 200 tenants), but not their
 * combinations: a team's calls of 200 models by 50 agents for 20 tenants made 200,000
 * burnrate_cost_usd_total series, a 21 MB scrape that held the event loop (every proxied call) for
 * 6.5 s each time Prometheus scraped, and 32 s the first time. The per-call counters now keep at
 * most 20,000 label sets apart each, as the OTLP export's instruments do: a later set is counted
 * with its agent and tenant `other`, its model kept, so totals stay whole.
 */

const MODELS = 200
const AGENTS = 50
const TENANTS = 3
const CALLS = MODELS * AGENTS * TENANTS

let t: TestServer
beforeAll(async () => {
  t = await startTestServer({ timezone: 'UTC', metrics: { enabled: true } })
  const ts = Date.now()
  for (let m = 0; m < MODELS; m++)
    for (let a = 0; a < AGENTS; a++)
      for (let n = 0; n < TENANTS; n++) t.server.ledger.record(makeCall({ provider: 'openai', model: `model-${m}`, agent: `agent-${a}`, tenant: `tenant-${n}`, cost_usd: 0.001 * (1 + (m % 7)), ts }))
  t.server.ledger.flush()
}, 300_000)
afterAll(async () => {
  await t?.cleanup()
})

const samples = (text: string, name: string) => text.split('\n').filter((l) => l.startsWith(`${name}{`))
const sum = (lines: string[]) => lines.reduce((s, l) => s + Number(l.split(' ').at(-1)), 0)

describe('the per-call counters with more label sets than the limit', () => {
  it('keep at most 20,000 sets apart each, the totals whole, the model of every call', async () => {
    const text = (await request(`${t.url}/metrics`)).text
    const cost = samples(text, 'burnrate_cost_usd_total')
    const calls = samples(text, 'burnrate_calls_total')
    // 20,000 sets, then one per model whose later calls were folded (agent and tenant `other`).
    expect(cost.length).toBeLessThanOrEqual(20_000 + MODELS)
    expect(calls.length).toBeLessThanOrEqual(20_000 + MODELS)
    expect(sum(calls)).toBe(CALLS)
    const stored = ledgerRows(t.dbFile).reduce((s, r) => s + r.cost_usd, 0)
    expect(sum(cost)).toBeCloseTo(stored, 9)
    // Every model still has its own cost.
    const models = new Set(cost.map((l) => /model="([^"]*)"/.exec(l)![1]))
    expect(models.size).toBe(MODELS)
    expect(cost.some((l) => l.includes('agent="other",tenant="other"'))).toBe(true)
  })
})
