import { spawnSync } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { request } from '../support/http'
import type { MockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { TOKEN_TYPES, type Row, expectSameMap, ledgerRows, runFixtureCalls, startFixtureUpstream, sumBy } from './support'

interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

/** The samples of a Prometheus text exposition. */
function parseExposition(text: string): Sample[] {
  const out: Sample[] = []
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!m) throw new Error(`not an exposition line: ${line}`)
    const labels: Record<string, string> = {}
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2].replace(/\\(.)/g, '$1')
    out.push({ name: m[1], labels, value: Number(m[3]) })
  }
  return out
}

/** `name`'s samples summed by the given labels (joined with `|`). */
function series(samples: Sample[], name: string, labels: string[]): Map<string, number> {
  return sumBy(
    samples.filter((s) => s.name === name),
    (s) => labels.map((l) => s.labels[l]).join('|'),
    (s) => s.value,
  )
}

let upstream: MockUpstream
let t: TestServer
let rows: Row[]
let samples: Sample[]
let text: string
const exactKey = 'sk-exact-key-must-not-leak-7777'

beforeAll(async () => {
  upstream = await startFixtureUpstream()
  t = await startTestServer(
    {
      timezone: 'UTC',
      metrics: { enabled: true },
      budgets: {
        rules: [
          { api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' },
          { api_key_pattern: 'sk-proj-*', daily_limit_usd: 1, weekly_limit_usd: 10, monthly_limit_usd: 40, action: 'warn' },
          { api_key_pattern: exactKey, monthly_limit_usd: 3, action: 'block' },
        ],
      },
    },
    upstream.url,
  )
  const statuses = await runFixtureCalls(t.url)
  expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 429, 429])
  t.server.ledger.flush()
  rows = ledgerRows(t.dbFile)
  const r = await request(`${t.url}/metrics`)
  expect(r.status).toBe(200)
  expect(r.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/)
  text = r.text
  samples = parseExposition(text)
})
afterAll(async () => {
  await t?.cleanup()
  await upstream?.close()
})

describe('GET /metrics after a run of fixture calls', () => {
  it('counts every call the ledger recorded, by provider, model, agent, status and streamed', () => {
    expect(rows).toHaveLength(10)
    const expected = sumBy(rows, (r) => [r.provider, r.model, r.agent, r.status, r.streamed ? 'true' : 'false'].join('|'), () => 1)
    expectSameMap(series(samples, 'burnrate_calls_total', ['provider', 'model', 'agent', 'status', 'streamed']), expected)
  })

  it('counts tokens by type exactly as the ledger has them', () => {
    for (const [type, column] of TOKEN_TYPES) {
      const expected = sumBy(rows, (r) => `${r.provider}|${r.model}`, (r) => r[column])
      const actual = series(samples.filter((s) => s.labels.type === type), 'burnrate_tokens_total', ['provider', 'model'])
      // A type with no tokens for a model has no series.
      for (const [k, v] of expected) expect(actual.get(k) ?? 0, `${type} ${k}`).toBe(v)
      expect([...actual.keys()].every((k) => expected.has(k))).toBe(true)
    }
    expect(series(samples, 'burnrate_tokens_total', ['type']).get('cache_write')).toBe(418 + 1165)
  })

  it('adds cost in US dollars exactly as the ledger recorded it, per provider, model, agent, tenant and billing', () => {
    const expected = sumBy(rows, (r) => [r.provider, r.model, r.agent, r.tenant, r.billing].join('|'), (r) => r.cost_usd)
    expectSameMap(series(samples, 'burnrate_cost_usd_total', ['provider', 'model', 'agent', 'tenant', 'billing']), expected)
    const total = rows.reduce((s, r) => s + r.cost_usd, 0)
    expect(total).toBeGreaterThan(0)
  })

  it('counts budget refusals by reason and rule, apart from the upstream 429', () => {
    expect(series(samples, 'burnrate_refusals_total', ['reason', 'rule'])).toEqual(new Map([['budget_exceeded|sk-blocked-*', 1]]))
  })

  it('observes each call once in the duration histogram, and each upstream call in the latency ones', () => {
    const count = (name: string) => series(samples, name, ['provider'])
    expectSameMap(count('burnrate_request_duration_seconds_count'), sumBy(rows, (r) => r.provider, () => 1))
    const upstreamCalls = sumBy(rows.filter((r) => r.error !== 'budget_exceeded'), (r) => r.provider, () => 1)
    expectSameMap(count('burnrate_added_latency_seconds_count'), upstreamCalls)
    expectSameMap(count('burnrate_upstream_first_byte_seconds_count'), upstreamCalls)
    const sum = series(samples, 'burnrate_request_duration_seconds_sum', ['provider'])
    for (const [p, ms] of sumBy(rows, (r) => r.provider, (r) => r.latency_ms)) expect(sum.get(p)).toBeCloseTo(ms / 1000, 9)
    // Burnrate's own part is a fraction of the whole call.
    const added = series(samples, 'burnrate_added_latency_seconds_sum', [])
    expect(added.get('')!).toBeLessThan(series(samples, 'burnrate_request_duration_seconds_sum', []).get('')!)
  })

  it('reports budget utilisation per rule and window from the engine, a whole-key rule by its hint', () => {
    const util = series(samples, 'burnrate_budget_utilization_ratio', ['rule', 'period'])
    const spent = rows.filter((r) => r.key_hint.startsWith('sk-') && r.api_key_hash && r.provider === 'openai' && r.status !== 429)
    const proj = spent.reduce((s, r) => s + r.cost_usd, 0)
    expect(util.get('sk-proj-*|daily')).toBeCloseTo(proj / 1, 12)
    expect(util.get('sk-proj-*|monthly')).toBeCloseTo(proj / 40, 12)
    expect(util.get('sk-proj-*|weekly')).toBeCloseTo(proj / 10, 12)
    expect(util.get('sk-blocked-*|daily')).toBe(1)
    expect(util.get('sk-…7777|monthly')).toBe(0)
    expect(series(samples, 'burnrate_budget_limit_usd', ['rule', 'period']).get('sk-proj-*|monthly')).toBe(40)
    expect(text).not.toContain(exactKey)
    expect(text).not.toContain('observability-aaaa1111')
  })

  it('reports ledger health and spend', async () => {
    const one = (name: string) => samples.find((s) => s.name === name)?.value
    expect(one('burnrate_ledger_writable')).toBe(1)
    expect(one('burnrate_ledger_dropped_total')).toBe(0)
    expect(one('burnrate_ledger_pending')).toBe(0)
    const total = rows.reduce((s, r) => s + r.cost_usd, 0)
    expect(series(samples, 'burnrate_spend_usd', ['period']).get('today')).toBeCloseTo(total, 12)
    expect(text).toContain('# TYPE burnrate_plan_utilization_ratio gauge')
  })

  it('passes promtool check metrics', () => {
    const found = spawnSync('promtool', ['--version'], { encoding: 'utf8' })
    if (found.error) {
      if (process.env.CI) throw new Error('promtool is missing: .ci/run installs it (apt-get install prometheus)')
      console.warn('skipped: promtool is not installed here (apt-get install prometheus)')
      return
    }
    const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' })
    expect(r.stdout + r.stderr).toBe('')
    expect(r.status).toBe(0)
  })
})

describe('GET /metrics access', () => {
  it('is not there unless metrics.enabled', async () => {
    const off = await startTestServer({})
    try {
      const r = await request(`${off.url}/metrics`)
      expect(r.status).toBe(404)
      expect(r.json().error.type).toBe('not_found')
    } finally {
      await off.cleanup()
    }
  })

  it('needs dashboard.token when one is set', async () => {
    const token = 'metrics-test-token-0123456789abcdef'
    const s = await startTestServer({ metrics: { enabled: true }, dashboard: { token } })
    try {
      expect((await request(`${s.url}/metrics`)).status).toBe(401)
      expect((await request(`${s.url}/metrics`, { headers: { authorization: 'Bearer wrong-token' } })).status).toBe(401)
      const ok = await request(`${s.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })
      expect(ok.status).toBe(200)
      expect(ok.text).toContain('# TYPE burnrate_calls_total counter')
    } finally {
      await s.cleanup()
    }
  })

  it('refuses to start beyond loopback without dashboard.token, even with the dashboard off', async () => {
    await expect(startTestServer({ server: { host: '0.0.0.0' }, metrics: { enabled: true }, dashboard: { enabled: false } })).rejects.toThrow(
      /\/metrics .*needs a token: set dashboard\.token/,
    )
  })
})
