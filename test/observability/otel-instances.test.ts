import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, postJson } from '../support/http'
import type { MockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { ledgerRows, startCollector, startFixtureUpstream } from './support'

/**
 * Two Burnrates exporting to one collector: the instances of a team on one PostgreSQL database, or
 * every developer's own Burnrate sending to the company's collector. A metric stream is named by
 * its resource's attributes, its scope, its name and its points' attributes, and each is to have one
 * writer (the OpenTelemetry data model's single-writer rule): Burnrate's resource was only
 * `service.name: burnrate` and its version, so two instances' calls of the same model, agent and
 * tenant were one stream written by both. Their cumulative sums alternated in it (a backend read each
 * fall as a counter reset), and the latest point, what a backend shows as the total, was one
 * instance's cost, never both's. Each process now names itself with `service.instance.id`.
 */

type KeyValue = { key: string; value: { stringValue?: string } }
const attrKey = (list: KeyValue[] | undefined) =>
  JSON.stringify((list ?? []).map((a) => [a.key, a.value.stringValue ?? JSON.stringify(a.value)]).sort())

/** Per stream (resource, scope, metric attributes) of counter `name`: its latest cumulative value. */
function latestPerStream(bodies: readonly any[], name: string): Map<string, number> {
  const out = new Map<string, number>()
  for (const body of bodies)
    for (const rm of body.resourceMetrics)
      for (const sm of rm.scopeMetrics)
        for (const m of sm.metrics) {
          if (m.name !== name) continue
          for (const p of m.sum?.dataPoints ?? []) out.set(`${attrKey(rm.resource?.attributes)}|${sm.scope?.name}|${attrKey(p.attributes)}`, p.asDouble ?? Number(p.asInt))
        }
  return out
}

let upstream: MockUpstream
let collector: Awaited<ReturnType<typeof startCollector>>
const servers: TestServer[] = []

beforeAll(async () => {
  upstream = await startFixtureUpstream()
  collector = await startCollector()
})
afterAll(async () => {
  for (const s of servers) await s.cleanup()
  await collector?.close()
  await upstream?.close()
})

describe('two Burnrates exporting to one collector', () => {
  it('write streams of their own: the latest point of each stream adds up to both ledgers', async () => {
    const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }
    const headers = { authorization: 'Bearer sk-instances-0001', 'x-burnrate-agent': 'claude-code', 'x-fixture': 'openai-chat/chat-nonstream-cached.json' }
    let expected = 0
    // One call through the first, two through the second: the same model, agent and tenant.
    for (const calls of [1, 2]) {
      const s = await startTestServer({ timezone: 'UTC', otel: { endpoint: collector.url, interval_ms: 200, traces: false } }, upstream.url)
      servers.push(s)
      for (let i = 0; i < calls; i++) expect((await postJson(`${s.url}/v1/chat/completions`, chat, headers)).status).toBe(200)
      s.server.ledger.flush()
      expected += ledgerRows(s.dbFile).reduce((sum, r) => sum + r.cost_usd, 0)
    }
    expect(expected).toBeGreaterThan(0)
    // Both have exported their calls (and go on exporting, each its own sums).
    const total = await eventually(() => {
      const sum = [...latestPerStream(collector.metrics, 'gen_ai.usage.cost').values()].reduce((a, b) => a + b, 0)
      return Math.abs(sum - expected) < 1e-12 ? sum : undefined
    }, 10_000).catch(() => [...latestPerStream(collector.metrics, 'gen_ai.usage.cost').values()].reduce((a, b) => a + b, 0))
    expect(total).toBeCloseTo(expected, 12)
    // And keep doing so: a later export of either does not take the other's place.
    const before = collector.metrics.length
    await eventually(() => (collector.metrics.length >= before + 4 ? true : undefined))
    expect([...latestPerStream(collector.metrics, 'gen_ai.usage.cost').values()].reduce((a, b) => a + b, 0)).toBeCloseTo(expected, 12)
  })
})
