import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PROVIDER_NAMES } from '../../src/main/providers/registry'
import { hashKey } from '../../src/main/proxy/attribution'
import { DEFAULT_RULE_OPTIONS } from '../../src/shared/api'
import { NANO_COST, NANO_FIXTURE, chat, replayJson } from '../budgets/support'
import { eventually, postJson } from '../support/http'
import { fixture } from '../support/fixtures'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { countStored, importLogs } from '../../src/main/import/importer'
import { Pricer } from '../../src/main/pricing/price'
import { writeClaudeCodeCall } from '../support/agent-logs'
import { ADMIN_CONFIG, admin } from './support'

let upstream: MockUpstream
let t: TestServer

const CONFIG = {
  ...ADMIN_CONFIG,
  providers: { anthropic: { enabled: false } },
  tenants: { key_mappings: [{ pattern: 'sk-team-*', tenant: 'team-a' }] },
  budgets: {
    rules: [
      { api_key_pattern: 'sk-team-*', monthly_limit_usd: 50, action: 'warn' },
      { api_key_pattern: 'sk-zero-*', daily_limit_usd: 0, action: 'block' },
    ],
  },
}

const BIG = 'sk-team-big-aaaaaaaaaaaa-0001'
const SMALL = 'sk-solo-small-bbbbbbbbb-0002'
const ZERO = 'sk-zero-cccccccccccc-0003'

beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
  t = await startTestServer(CONFIG, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

async function keys(s: TestServer) {
  const r = await admin(s.url, 'GET', '/api-keys')
  expect(r.status).toBe(200)
  return r.json() as any[]
}

describe('GET /api-keys and /providers', () => {
  it('start empty: every configured provider listed, no traffic yet', async () => {
    expect(await keys(t)).toEqual([])
    const r = await admin(t.url, 'GET', '/providers')
    expect(r.status).toBe(200)
    const list = r.json() as any[]
    // Every provider Burnrate knows, configured or left at its default, sorted by name.
    expect(list.map((p) => p.name)).toEqual([...PROVIDER_NAMES].sort())
    for (const p of list) expect(typeof p.base_url).toBe('string')
    const byName = new Map(list.map((p) => [p.name, p]))
    expect(byName.get('anthropic')).toEqual({ name: 'anthropic', base_url: upstream.url, enabled: false, requests_today: 0, errors_today: 0, last_status: null, last_error: null, last_request_at: null, avg_latency_ms: null })
    expect(byName.get('openai')).toEqual({ name: 'openai', base_url: `${upstream.url}/v1`, enabled: true, requests_today: 0, errors_today: 0, last_status: null, last_error: null, last_request_at: null, avg_latency_ms: null })
  })

  it('one row per key seen this month with hint, tenant, spend and the effective rule, costliest first', async () => {
    for (let i = 0; i < 3; i++) expect((await chat(t, BIG)).status).toBe(200)
    expect((await chat(t, SMALL)).status).toBe(200)
    expect((await chat(t, ZERO)).status).toBe(429)
    await eventually(() => t.server.ledger.spend.key(hashKey(BIG)).month > 0)
    const rows = await keys(t)
    expect(rows.map((r) => r.api_key_hash)).toEqual([hashKey(BIG), hashKey(SMALL), hashKey(ZERO)])
    const [big, small, zero] = rows
    expect(big).toEqual({
      api_key_hash: hashKey(BIG),
      key_hint: 'sk-…0001',
      tenant: 'team-a',
      requests_month: 3,
      spend_today_usd: 3 * NANO_COST,
      spend_month_usd: 3 * NANO_COST,
      last_seen_at: expect.stringMatching(/Z$/),
      rule: { ...DEFAULT_RULE_OPTIONS, api_key_pattern: 'sk-team-*', daily_limit_usd: null, monthly_limit_usd: 50, action: 'warn', soft_limit_pct: null, source: 'config', overridden: false, created_at: null },
    })
    expect(big.spend_month_usd).toBeCloseTo(3 * NANO_COST, 15)
    expect(small).toMatchObject({ tenant: '', requests_month: 1, spend_month_usd: NANO_COST, rule: null })
    // A refused call counts as a request of its key, at no cost.
    expect(zero).toMatchObject({ requests_month: 1, spend_month_usd: 0, rule: { api_key_pattern: 'sk-zero-*' } })
    expect(JSON.stringify(rows)).not.toContain(BIG)
  })

  it('shows a runtime rule created after the key was last seen when it is exact or the key matched it before', async () => {
    await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: SMALL, daily_limit_usd: 7, action: 'block' } })
    const small = (await keys(t)).find((r) => r.api_key_hash === hashKey(SMALL))
    expect(small.rule).toMatchObject({ api_key_pattern: SMALL, source: 'runtime', daily_limit_usd: 7 })
    await admin(t.url, 'DELETE', `/budgets/rules?pattern=${encodeURIComponent(SMALL)}`)
    expect((await keys(t)).find((r) => r.api_key_hash === hashKey(SMALL)).rule).toBeNull()
  })

  it('providers: today\'s requests, errors, last status and error, latency; budget refusals are not provider errors', async () => {
    upstream.setResponder(() => ({ status: 429, headers: { 'content-type': 'application/json' }, body: fixture('errors/openai-429-rate-limit-tpm.json') }))
    expect((await chat(t, SMALL)).status).toBe(429)
    replayJson(upstream, NANO_FIXTURE)
    expect((await chat(t, SMALL)).status).toBe(200)
    const openai = await eventually(async () => {
      const r = (await admin(t.url, 'GET', '/providers')).json().find((p: any) => p.name === 'openai')
      return r.requests_today === 6 ? r : null
    })
    // 3 + 1 earlier, the upstream 429 and the last 200; the budget refusal is not counted.
    expect(openai).toMatchObject({ requests_today: 6, errors_today: 1, last_status: 200, last_error: 'HTTP 429' })
    expect(openai.avg_latency_ms).toBeGreaterThan(0)
    expect(Date.parse(openai.last_request_at)).toBeLessThanOrEqual(Date.now())
  })

  it('survive a restart: keys, spend and provider status come back from the database', async () => {
    const before = await keys(t)
    const providersBefore = (await admin(t.url, 'GET', '/providers')).json()
    t = await t.restart()
    const after = await keys(t)
    // Prefix rules the key was seen matching are known again once it calls; until then exact, "*" and
    // short prefixes (from the hint) resolve. sk-team-* is longer than the hint shows.
    expect(after.map((r) => ({ ...r, rule: null }))).toEqual(before.map((r) => ({ ...r, rule: null })))
    expect((await admin(t.url, 'GET', '/providers')).json()).toEqual(providersBefore)
    expect((await chat(t, BIG)).status).toBe(200)
    const big = await eventually(async () => {
      const r = (await keys(t)).find((x) => x.api_key_hash === hashKey(BIG))
      return r.requests_month === 4 ? r : null
    })
    expect(big.rule).toMatchObject({ api_key_pattern: 'sk-team-*' })
  })

  it('providers: calls imported from an agent\'s logs never went through a provider here, before or after a restart', async () => {
    const providersBefore = (await admin(t.url, 'GET', '/providers')).json()
    // A Claude Code call of 11 minutes ago (Anthropic), imported into the running server's ledger as its log watcher does.
    const logs = mkdtempSync(join(tmpdir(), 'burnrate-provider-logs-'))
    try {
      const dir = writeClaudeCodeCall(logs, 'msg_provider_status_1', 'claude-haiku-4-5-20251001')
      const s = await importLogs(t.server.db, { agent: 'claude-code', paths: [dir], pricer: new Pricer(), onCall: countStored(t.server.ledger, () => null) })
      expect(s.imported).toBe(1)
    } finally {
      rmSync(logs, { recursive: true, force: true })
    }
    expect((await admin(t.url, 'GET', '/providers')).json()).toEqual(providersBefore)
    t = await t.restart()
    // Read again from the database: the same status, anthropic without a request today.
    const after = (await admin(t.url, 'GET', '/providers')).json()
    expect(after.find((p: any) => p.name === 'anthropic')).toMatchObject({ requests_today: 0, last_request_at: null, avg_latency_ms: null })
    expect(after).toEqual(providersBefore)
  })

  it('providers: a team server counts its members\' ingested calls nowhere in its own providers\' status, before or after a restart', async () => {
    const MEMBER = 'team-token-alice-status-7f3c9a1e5b'
    let team = await startTestServer({ ...ADMIN_CONFIG, team: { members: [{ name: 'alice', token: MEMBER }] } })
    try {
      const before = (await admin(team.url, 'GET', '/providers')).json()
      const sent = {
        id: 1, t: new Date(Date.now() - 1_000).toISOString(), provider: 'openai', model: 'gpt-4o-mini', api_key_hash: 'a'.repeat(64), key_hint: 'sk-…4242',
        tenant: '', agent: '', session: '', status: 500, streamed: false, input_tokens: 10, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0,
        reasoning_tokens: 0, cost_usd: 0, priced: true, estimated: false, latency_ms: 30_000, response_id: '', source: 'proxy', billing: 'api', project: '', member: '',
      }
      const r = await postJson(`${team.url}/api/ingest`, { calls: [sent] }, { authorization: `Bearer ${MEMBER}` })
      expect(r.json()).toMatchObject({ accepted: 1 })
      expect((await admin(team.url, 'GET', '/providers')).json()).toEqual(before)
      team = await team.restart()
      expect((await admin(team.url, 'GET', '/providers')).json()).toEqual(before)
    } finally {
      await team.cleanup()
    }
  })

  it("agents: a team member's ingested calls are not this server's agents' calls through the proxy, before or after a restart", async () => {
    const MEMBER = 'team-token-alice-agents-7f3c9a1e5b'
    const home = mkdtempSync(join(tmpdir(), 'burnrate-agents-home-'))
    const config = { ...ADMIN_CONFIG, team: { members: [{ name: 'alice', token: MEMBER }] } }
    let team = await startTestServer(config, undefined, undefined, { create: { agentHome: { home, env: { PATH: '' }, platform: 'linux' } } })
    const claude = async () => (await admin(team.url, 'GET', '/agents')).json().agents.find((a: any) => a.agent === 'claude-code')
    try {
      const sent = {
        id: 1, t: new Date(Date.now() - 1_000).toISOString(), provider: 'anthropic', model: 'claude-sonnet-4-5', api_key_hash: 'a'.repeat(64), key_hint: 'sk-…4242',
        tenant: '', agent: 'claude-code', session: 's-1', status: 200, streamed: true, input_tokens: 10, output_tokens: 5, cache_read_tokens: 0, cache_write_tokens: 0,
        reasoning_tokens: 0, cost_usd: 0.01, priced: true, estimated: false, latency_ms: 300, response_id: 'msg_1', source: 'proxy', billing: 'api', project: '', member: '',
      }
      expect((await postJson(`${team.url}/api/ingest`, { calls: [sent] }, { authorization: `Bearer ${MEMBER}` })).json()).toMatchObject({ accepted: 1 })
      expect(await claude()).toMatchObject({ last_call_at: null, last_import_at: null })
      team = await team.restart()
      expect(await claude()).toMatchObject({ last_call_at: null, last_import_at: null })
    } finally {
      await team.cleanup()
      rmSync(home, { recursive: true, force: true })
    }
  })
})
