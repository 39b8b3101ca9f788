import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, request } from '../support/http'
import type { MockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { type Row, expectSameMap, ledgerRows, runFixtureCalls, startFixtureUpstream, sumBy } from './support'

type AnyValue = { stringValue?: string; intValue?: number | string; doubleValue?: number; boolValue?: boolean }
type KeyValue = { key: string; value: AnyValue }

function attrs(list: KeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {}
  for (const { key, value: v } of list ?? []) {
    out[key] = v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue ?? ''
  }
  return out
}

/** A loopback OTLP/HTTP (JSON) collector that keeps what it is sent. */
async function startCollector(): Promise<{ url: string; traces: any[]; metrics: any[]; headers: http.IncomingHttpHeaders[]; paths: string[]; close(): Promise<void> }> {
  const traces: any[] = []
  const metrics: any[] = []
  const headers: http.IncomingHttpHeaders[] = []
  const paths: string[] = []
  const server = http.createServer(async (req, res) => {
    headers.push(req.headers)
    paths.push(req.url ?? '')
    const parts: Buffer[] = []
    for await (const c of req) parts.push(c as Buffer)
    const body = JSON.parse(Buffer.concat(parts).toString('utf8'))
    if (req.url === '/v1/traces') traces.push(body)
    else if (req.url === '/v1/metrics') metrics.push(body)
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end('{}')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    traces,
    metrics,
    headers,
    paths,
    close: () => new Promise((r) => server.close(() => r())),
  }
}

function spansOf(bodies: any[]): { name: string; start: number; end: number; attributes: Record<string, any>; status: any }[] {
  return bodies.flatMap((b) =>
    b.resourceSpans.flatMap((rs: any) =>
      rs.scopeSpans.flatMap((ss: any) =>
        ss.spans.map((s: any) => ({
          name: s.name,
          // ms since the epoch, as the ledger has them (the start in whole ms, as the call's ts)
          start: Number((BigInt(s.startTimeUnixNano) + 500_000n) / 1_000_000n),
          end: Number(BigInt(s.endTimeUnixNano)) / 1e6,
          attributes: attrs(s.attributes),
          status: s.status,
        })),
      ),
    ),
  )
}

/** The data points of metric `name` in one export. */
function points(body: any, name: string): { attributes: Record<string, any>; value: number; count?: number }[] {
  const out: { attributes: Record<string, any>; value: number; count?: number }[] = []
  for (const rm of body.resourceMetrics)
    for (const sm of rm.scopeMetrics)
      for (const m of sm.metrics) {
        if (m.name !== name) continue
        for (const p of m.sum?.dataPoints ?? []) out.push({ attributes: attrs(p.attributes), value: p.asDouble ?? Number(p.asInt) })
        for (const p of m.histogram?.dataPoints ?? []) out.push({ attributes: attrs(p.attributes), value: p.sum, count: Number(p.count) })
      }
  return out
}

const PROVIDER: Record<string, string> = { openai: 'openai', anthropic: 'anthropic', gemini: 'gcp.gemini' }
const rules = [{ api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' }]

let upstream: MockUpstream
beforeAll(async () => {
  upstream = await startFixtureUpstream()
})
afterAll(async () => {
  await upstream?.close()
})

describe('OTLP export to a loopback collector', () => {
  let collector: Awaited<ReturnType<typeof startCollector>>
  let t: TestServer
  let rows: Row[]
  beforeAll(async () => {
    collector = await startCollector()
    t = await startTestServer({ timezone: 'UTC', budgets: { rules }, otel: { endpoint: collector.url, interval_ms: 200, headers: { 'x-team': 'ai' } } }, upstream.url)
    await runFixtureCalls(t.url)
    t.server.ledger.flush()
    rows = ledgerRows(t.dbFile)
    expect(rows).toHaveLength(10)
  })
  afterAll(async () => {
    await t?.cleanup()
    await collector?.close()
  })

  it('sends one span per call with the GenAI conventions and the ledger values', async () => {
    const spans = (await eventually(() => {
      const s = spansOf(collector.traces)
      return s.length >= rows.length ? s : null
    }, 15_000)) as ReturnType<typeof spansOf>
    expect(spans).toHaveLength(rows.length)
    const key = (x: Record<string, any>) =>
      [
        x.provider, x.model, x.status, x.input, x.output, x.cacheRead, x.cacheWrite, x.reasoning, x.cost, x.start, x.session, x.agent, x.tenant, x.billing,
      ].join('|')
    const fromRows = rows.map((r) =>
      key({
        provider: PROVIDER[r.provider], model: r.model, status: r.status, input: r.input_tokens, output: r.output_tokens,
        cacheRead: r.cache_read_tokens, cacheWrite: r.cache_write_tokens, reasoning: r.reasoning_tokens, cost: r.cost_usd,
        start: r.ts, session: r.session, agent: r.agent || undefined, tenant: r.tenant || undefined, billing: r.billing,
      }),
    )
    const fromSpans = spans.map((s) =>
      key({
        provider: s.attributes['gen_ai.provider.name'], model: s.attributes['gen_ai.request.model'], status: s.attributes['http.response.status_code'],
        input: s.attributes['gen_ai.usage.input_tokens'], output: s.attributes['gen_ai.usage.output_tokens'],
        cacheRead: s.attributes['gen_ai.usage.cache_read.input_tokens'], cacheWrite: s.attributes['gen_ai.usage.cache_creation.input_tokens'],
        reasoning: s.attributes['gen_ai.usage.reasoning.output_tokens'], cost: s.attributes['gen_ai.usage.cost'],
        start: s.start, session: s.attributes['gen_ai.conversation.id'], agent: s.attributes['gen_ai.agent.name'], tenant: s.attributes['burnrate.tenant'],
        billing: s.attributes['burnrate.billing'],
      }),
    )
    expect(fromSpans.sort()).toEqual(fromRows.sort())
    // Each span lasts as long as its call (to the microsecond the SDK's time conversion keeps).
    const durations = (xs: number[]) => xs.sort((a, b) => a - b)
    const spanMs = durations(spans.map((s) => s.end - s.start))
    durations(rows.map((r) => r.latency_ms)).forEach((ms, i) => expect(Math.abs(spanMs[i] - ms)).toBeLessThan(0.002))

    const chat = spans.find((s) => s.attributes['gen_ai.request.model'] === 'gpt-5-2025-08-07')!
    expect(chat.name).toBe('chat gpt-5-2025-08-07')
    expect(chat.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.system': 'openai', 'gen_ai.request.stream': true, 'burnrate.priced': true })
    const refused = spans.find((s) => s.attributes['error.type'] === 'budget_exceeded')!
    expect(refused.status.code).toBe(2)
    expect(spans.find((s) => s.attributes['gen_ai.provider.name'] === 'gcp.gemini')!.attributes['gen_ai.operation.name']).toBe('generate_content')
    for (const s of spans) expect(JSON.stringify(s.attributes)).not.toContain('observability-')
    expect(collector.headers.every((h) => h['x-team'] === 'ai' && h['content-type'] === 'application/json')).toBe(true)
  })

  it('sends GenAI metrics whose totals match the ledger', async () => {
    // Cumulative temporality: the latest export holds every call.
    const last = await eventually(() => {
      const body = collector.metrics.at(-1)
      const n = body && points(body, 'gen_ai.client.operation.duration').reduce((s, p) => s + (p.count ?? 0), 0)
      return n === rows.length && body
    }, 15_000)
    const cost = points(last, 'gen_ai.usage.cost')
    expectSameMap(
      sumBy(cost, (p) => `${p.attributes['gen_ai.provider.name']}|${p.attributes['gen_ai.request.model']}|${p.attributes['gen_ai.agent.name']}|${p.attributes['burnrate.tenant']}|${p.attributes['burnrate.billing']}`, (p) => p.value),
      sumBy(rows, (r) => `${PROVIDER[r.provider]}|${r.model}|${r.agent}|${r.tenant}|${r.billing}`, (r) => r.cost_usd),
    )
    // Only calls whose tokens are known: one refused by a budget or failed before any usage
    // (no token counted, as the ledger records it) is no 0-token point of the histogram.
    const tokens = points(last, 'gen_ai.client.token.usage')
    const used = rows.filter((r) => r.input_tokens > 0 || r.output_tokens > 0)
    expect(used.length).toBeLessThan(rows.length)
    expect(rows.some((r) => r.error === 'budget_exceeded' && r.input_tokens === 0 && r.output_tokens === 0)).toBe(true)
    for (const [type, column] of [['input', 'input_tokens'], ['output', 'output_tokens']] as const) {
      const ofType = tokens.filter((p) => p.attributes['gen_ai.token.type'] === type)
      expect(ofType.reduce((n, p) => n + (p.count ?? 0), 0)).toBe(used.length)
      expectSameMap(
        sumBy(ofType, (p) => `${p.attributes['gen_ai.provider.name']}|${p.attributes['gen_ai.request.model']}`, (p) => p.value),
        sumBy(used, (r) => `${PROVIDER[r.provider]}|${r.model}`, (r) => r[column]),
      )
    }
    const cacheRead = points(last, 'burnrate.tokens').filter((p) => p.attributes['burnrate.token.type'] === 'cache_read')
    expect(cacheRead.reduce((s, p) => s + p.value, 0)).toBe(rows.reduce((s, r) => s + r.cache_read_tokens, 0))
    const failed = points(last, 'gen_ai.client.operation.duration').filter((p) => p.attributes['error.type'])
    expect(failed.map((p) => p.attributes['error.type']).sort()).toEqual(['429', 'budget_exceeded'])
  })

  it('shows its state in /api/health', async () => {
    const health = await eventually(async () => {
      const h = (await request(`${t.url}/api/health`)).json()
      return h.otel?.exported_spans === rows.length && h
    }, 15_000)
    expect(health.otel).toMatchObject({ endpoint: collector.url, queued: 0, dropped_spans: 0, failed_metric_exports: 0, last_error: null })
    expect(health.otel.metric_exports).toBeGreaterThan(0)
  })
})

describe('a collector at a path with a query (behind a gateway)', () => {
  it("gets each signal at the endpoint's path plus /v1/traces or /v1/metrics, its query kept", async () => {
    const c = await startCollector()
    const t = await startTestServer({ budgets: { rules }, otel: { endpoint: `${c.url}/otlp?tenant=abc`, interval_ms: 200 } }, upstream.url)
    try {
      await runFixtureCalls(t.url)
      await eventually(() => c.paths.includes('/otlp/v1/traces?tenant=abc') && c.paths.includes('/otlp/v1/metrics?tenant=abc'), 20_000)
      expect(new Set(c.paths)).toEqual(new Set(['/otlp/v1/traces?tenant=abc', '/otlp/v1/metrics?tenant=abc']))
    } finally {
      await t.cleanup()
      await c.close()
    }
  })
})

describe('OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=delta in the environment', () => {
  it('is followed (a backend such as Dynatrace takes only deltas; README says what a failed export then loses)', async () => {
    const before = process.env.OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE
    process.env.OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE = 'delta'
    const c = await startCollector()
    let t: TestServer | null = null
    try {
      t = await startTestServer({ timezone: 'UTC', budgets: { rules }, otel: { endpoint: c.url, interval_ms: 200 } }, upstream.url)
      await runFixtureCalls(t.url)
      const sums = await eventually(() => {
        const all = c.metrics.flatMap((b) => b.resourceMetrics.flatMap((r: any) => r.scopeMetrics.flatMap((s: any) => s.metrics)))
        const cost = all.filter((m: any) => m.name === 'gen_ai.usage.cost' && m.sum)
        return cost.length > 0 ? cost : null
      }, 20_000)
      // OTLP's AggregationTemporality: 1 delta, 2 cumulative.
      expect(new Set(sums!.map((m: any) => m.sum.aggregationTemporality))).toEqual(new Set([1]))
    } finally {
      if (before === undefined) delete process.env.OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE
      else process.env.OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE = before
      await t?.cleanup()
      await c.close()
    }
  })
})

describe('an unreachable collector', () => {
  it('costs the proxied calls nothing: they all go through, the spans are dropped and counted', async () => {
    const closed = http.createServer()
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r))
    const port = (closed.address() as AddressInfo).port
    await new Promise((r) => closed.close(r))
    const t = await startTestServer(
      { budgets: { rules }, otel: { endpoint: `http://127.0.0.1:${port}`, interval_ms: 200, timeout_ms: 500, max_queue: 3 } },
      upstream.url,
    )
    try {
      const statuses = await runFixtureCalls(t.url)
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 429, 429])
      const health = await eventually(async () => {
        const h = (await request(`${t.url}/api/health`)).json()
        expect(h.otel.queued).toBeLessThanOrEqual(3)
        return h.otel.dropped_spans === statuses.length && h.otel.failed_metric_exports > 0 && h
      }, 20_000)
      expect(health.status).toBe('ok')
      expect(health.otel).toMatchObject({ exported_spans: 0, queued: 0 })
      expect(health.otel.last_error).toMatch(/export to http:\/\/127\.0\.0\.1:\d+ failed/)
      // Every call is in the ledger all the same.
      t.server.ledger.flush()
      expect(ledgerRows(t.dbFile)).toHaveLength(statuses.length)
    } finally {
      await t.cleanup()
    }
  })

  it('is not in /api/health when export is off', async () => {
    const t = await startTestServer({})
    try {
      expect((await request(`${t.url}/api/health`)).json().otel).toBeNull()
    } finally {
      await t.cleanup()
    }
  })
})
