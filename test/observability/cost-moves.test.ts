import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { writeClaudeCodeCall } from '../support/agent-logs'
import { runCliCaptured } from '../support/cli'
import { chatAnswer } from '../pricing/support'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { otlpSum, startCollector } from './support'
import { RAN, line } from '../providers/batch-support'

/**
 * A recorded call's cost that moves later (re-pricing; a background response's real usage goes
 * the same way, pricing/moves.ts) moves the Prometheus and OTLP cost counters too: a rise is added
 * to the cost counter, a fall to the reductions counter (counters never go down). Before, both
 * kept the cost as first recorded: an unpriced model priced later stayed at $0 in Grafana.
 */

const MODEL = 'gpt-6.1-sol' // unknown to the bundled prices: recorded unpriced, cost 0
const KEY = 'sk-test-moves-aaaaaaaaaaaa'

let upstream: MockUpstream
let t: TestServer
let collector: Awaited<ReturnType<typeof startCollector>>

/** Prometheus: the value of `name` for MODEL (0 when it has no sample). */
async function prom(name: string): Promise<number> {
  const text = (await request(`${t.url}/metrics`)).text
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(`model="${MODEL}"`))
  return line ? Number(line.split(' ').at(-1)) : 0
}

/** OTLP: the cumulative sum of `name` for MODEL in the latest export that has it. */
const otlp = (name: string) => otlpSum(collector.metrics, name, { 'gen_ai.request.model': MODEL })

/** A Batch API output file with one request of BATCHED (unknown to the prices: recorded at $0). */
const BATCHED = 'gpt-batched-nonexistent-9'
const BATCH_OUTPUT = Buffer.from(line('batch_req_moves01', 'task-1', { ...JSON.parse(chatAnswer(BATCHED, 1_000_000, 100_000)), id: 'chatcmpl-moves-batch-1', created: RAN }) + '\n')

const near = (a: number | null, b: number) => a !== null && Math.abs(a - b) <= 1e-9

async function stored(): Promise<number> {
  const rows = t.server.db.prepare('SELECT cost_usd FROM calls WHERE model = ?').all(MODEL) as { cost_usd: number }[]
  return rows.reduce((s, r) => s + r.cost_usd, 0)
}

beforeAll(async () => {
  upstream = await startMockUpstream((req) =>
    req.url.startsWith('/v1/files/')
      ? { status: 200, headers: { 'content-type': 'application/octet-stream' }, body: BATCH_OUTPUT }
      : { status: 200, headers: { 'content-type': 'application/json' }, body: chatAnswer(MODEL, 1_000_000, 100_000) },
  )
  collector = await startCollector()
  t = await startTestServer(
    { ...ADMIN_CONFIG, timezone: 'UTC', metrics: { enabled: true }, otel: { endpoint: collector.url, interval_ms: 200, traces: false }, import: { watch: false } },
    upstream.url,
  )
})
afterAll(async () => {
  await t?.cleanup()
  await upstream?.close()
  await collector?.close()
})

describe('the cost counters follow a recorded call whose cost moves', () => {
  it('a re-priced call adds its rise to the cost counters, and a later fall to the reductions counters', async () => {
    for (let i = 0; i < 2; i++) {
      const r = await postJson(`${t.url}/v1/chat/completions`, { model: MODEL, messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${KEY}` })
      expect(r.status).toBe(200)
    }
    await eventually(() => (t.server.db.prepare('SELECT count(*) AS n FROM calls WHERE model = ?').get(MODEL) as { n: number }).n === 2)
    expect(await prom('burnrate_cost_usd_total')).toBe(0)

    // Priced at $3 / $12 per million: each call costs 3 + 1.2.
    expect((await admin(t.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 3, output_mtok: 12 } })).status).toBe(200)
    expect((await admin(t.url, 'POST', `/prices/openai/${MODEL}/reprice`)).json()).toMatchObject({ repriced: 2 })
    expect(await stored()).toBeCloseTo(8.4, 12)
    expect(near(await prom('burnrate_cost_usd_total'), 8.4)).toBe(true)
    expect(await prom('burnrate_cost_reductions_usd_total')).toBe(0)
    await eventually(() => near(otlp('gen_ai.usage.cost'), 8.4), 10_000)

    // Cheaper after all ($1 / $2): each call falls by 3. Counters never go down: the fall is counted apart.
    expect((await admin(t.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 1, output_mtok: 2 } })).status).toBe(200)
    expect((await admin(t.url, 'POST', `/prices/openai/${MODEL}/reprice?all=true`)).json()).toMatchObject({ repriced: 2 })
    expect(await stored()).toBeCloseTo(2.4, 12)
    expect(near(await prom('burnrate_cost_usd_total'), 8.4)).toBe(true)
    expect(near(await prom('burnrate_cost_reductions_usd_total'), 6)).toBe(true)
    expect(near((await prom('burnrate_cost_usd_total')) - (await prom('burnrate_cost_reductions_usd_total')), await stored())).toBe(true)
    await eventually(() => near(otlp('burnrate.cost.reductions'), 6) && near(otlp('gen_ai.usage.cost'), 8.4), 10_000)
  })

  it("an imported call's re-pricing moves no counter: imported calls are not in them, so their cost would show with no call", async () => {
    const IMPORTED = 'claude-nonexistent-9-9'
    const logs = mkdtempSync(join(tmpdir(), 'burnrate-moves-logs-'))
    try {
      const dir = writeClaudeCodeCall(logs, 'imported-1', IMPORTED)
      const r = await runCliCaptured('import', 'claude-code', '--path', dir, '--config', t.configFile, '--data-dir', t.dir, '--url', t.url)
      expect(r.code).toBe(0)
      const cost = () => (t.server.db.prepare("SELECT sum(cost_usd) AS c FROM calls WHERE model = ? AND source = 'import'").get(IMPORTED) as { c: number | null }).c
      await eventually(() => cost() === 0)
      expect((await admin(t.url, 'PUT', `/prices/anthropic/${IMPORTED}`, { body: { input_mtok: 3, output_mtok: 15 } })).status).toBe(200)
      expect((await admin(t.url, 'POST', `/prices/anthropic/${IMPORTED}/reprice`)).json()).toMatchObject({ repriced: 1 })
      expect(cost()).toBeGreaterThan(0)
      const series = (await request(`${t.url}/metrics`)).text.split('\n').filter((l) => l.includes(`model="${IMPORTED}"`))
      expect(series).toEqual([])
      // An OTLP export after the re-price (a proxied call's, to know one came) has none either.
      const exports = collector.metrics.length
      await eventually(() => collector.metrics.length > exports + 1, 10_000)
      expect(otlpSum(collector.metrics, 'gen_ai.usage.cost', { 'gen_ai.request.model': IMPORTED })).toBeNull()
    } finally {
      rmSync(logs, { recursive: true, force: true })
    }
  })

  it("a Batch API request's re-pricing moves no counter: batch results are stored from their file, never in the per-call counters", async () => {
    const r = await request(`${t.url}/v1/files/file-moves01/content`, { headers: { authorization: `Bearer ${KEY}`, 'user-agent': 'OpenAI/Python 1.99.0' } })
    expect(r.status).toBe(200)
    const cost = () => (t.server.db.prepare("SELECT sum(cost_usd) AS c FROM calls WHERE model = ? AND endpoint LIKE 'batch.%'").get(BATCHED) as { c: number | null }).c
    await eventually(() => cost() === 0)
    expect((await admin(t.url, 'PUT', `/prices/openai/${BATCHED}`, { body: { input_mtok: 3, output_mtok: 15 } })).status).toBe(200)
    expect((await admin(t.url, 'POST', `/prices/openai/${BATCHED}/reprice`)).json()).toMatchObject({ repriced: 1 })
    expect(cost()).toBeGreaterThan(0)
    const series = (await request(`${t.url}/metrics`)).text.split('\n').filter((l) => l.includes(`model="${BATCHED}"`))
    expect(series).toEqual([])
    const exports = collector.metrics.length
    await eventually(() => collector.metrics.length > exports + 1, 10_000)
    expect(otlpSum(collector.metrics, 'gen_ai.usage.cost', { 'gen_ai.request.model': BATCHED })).toBeNull()
  })
})
