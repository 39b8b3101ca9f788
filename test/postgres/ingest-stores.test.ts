import { beforeAll, describe, expect, it } from 'vitest'
import { GROUP_BYS, RANGES } from '../../src/shared/api'
import { hashKey } from '../../src/main/proxy/attribution'
import { postJson, request } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'

/**
 * A team server answers the same for its members' calls whether its ledger is SQLite or PostgreSQL:
 * ingested calls go into the rollups by another path on each (SQLite's RollupWriter and report
 * folder, PostgreSQL's applyRollups in the ingest transaction), as do their revisions and an
 * imported call a member's proxy superseded. Every dashboard endpoint (each range, grouping,
 * tenant, and a member's costs), the report of each kind and `burnrate_spend_usd` are compared;
 * money to 9 significant digits (PostgreSQL adds in another order).
 */
const ALICE = 'team-token-alice-7f3c9a1e5b'
const BOB = 'team-token-bob-2d8e4f6a0c'
const MEMBERS = [{ name: 'alice', token: ALICE }, { name: 'bob', token: BOB }]
const TZ = 'Asia/Kolkata'

const h = usePostgres({ upstream: false })
let lite: TestServer
let pg: TestServer

function call(id: number, ts: number, over: Record<string, unknown> = {}) {
  const key = `sk-proj-member-key-${id % 3}000abcd`
  return {
    id, t: new Date(ts).toISOString(), provider: id % 2 ? 'openai' : 'anthropic', model: id % 2 ? 'gpt-5-nano' : 'claude-sonnet-4-5',
    api_key_hash: hashKey(key), key_hint: `sk-…${key.slice(-4)}`, tenant: ['', 'acme', 'globex'][id % 3], agent: ['codex', 'claude-code'][id % 2],
    session: `s-${id % 5}`, status: id % 11 === 0 ? 500 : 200, streamed: id % 2 === 0, input_tokens: 1000 + id, output_tokens: 50 + id,
    cache_read_tokens: id % 7, cache_write_tokens: 0, reasoning_tokens: id % 4, cost_usd: 0.001 * ((id * 37) % 101) + 0.1, priced: id % 13 !== 0,
    estimated: false, latency_ms: 100 + id, project: `/p/${id % 4}`, billing: id % 9 === 0 ? 'subscription' : 'api', ...over,
  }
}

/** Every dashboard endpoint's address: each range, grouping and tenant, a member's costs, each report kind. */
function paths(): string[] {
  const out: string[] = []
  for (const tenant of ['', 'acme', 'globex']) {
    const q = `tenant=${tenant}`
    out.push(`/api/dashboard/summary?${q}`, `/api/dashboard/sessions?${q}`)
    for (const range of RANGES) {
      out.push(`/api/dashboard/timeseries?range=${range}&${q}`, `/api/dashboard/stats?range=${range}&${q}`, `/api/dashboard/expensive?range=${range}&${q}`)
      for (const g of GROUP_BYS) out.push(`/api/dashboard/costs?group_by=${g}&range=${range}&${q}`)
      for (const m of ['alice', 'bob']) out.push(`/api/dashboard/costs?group_by=model&range=${range}&member=${m}&${q}`)
    }
    for (const kind of ['daily', 'weekly', 'monthly', 'session', 'model', 'agent', 'project']) out.push(`/api/dashboard/report?kind=${kind}${tenant ? `&${q}` : ''}`)
  }
  return out
}

/** What `path` answers (for /metrics, its spend gauges). */
async function read(t: TestServer, path: string): Promise<unknown> {
  const r = await request(t.url + path)
  if (path !== '/metrics') return norm(r.json())
  return r.text.split('\n').filter((l) => l.startsWith('burnrate_spend_usd')).map((l) => [l.split(' ')[0], norm(Number(l.split(' ')[1]))])
}

/** Numbers rounded to 1e-9 relative, for sums added in another order. */
function norm(v: unknown): unknown {
  if (typeof v === 'number') return Number.isInteger(v) ? v : Number(v.toPrecision(9))
  if (Array.isArray(v)) return v.map(norm)
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).filter(([k]) => k !== 'generated_at').map(([k, x]) => [k, norm(x)]))
  return v
}

beforeAll(async () => {
  const config = { timezone: TZ, metrics: { enabled: true }, team: { members: MEMBERS } }
  lite = await h.server({ url: null, config })
  pg = await h.server({ config })
}, 120_000)

describe('a team server on SQLite and one on PostgreSQL, the same members\' calls', () => {
  it('answer the same', async () => {
    const now = Date.now()
    const calls = Array.from({ length: 300 }, (_, i) => call(i + 1, now - 60_000 - i * 3_700_000))
    // An imported call superseded by the proxied one after it, a call stamped ahead.
    calls.push(call(301, now - 30_000, { source: 'import', superseded_by: 302, cost_usd: 0, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, reasoning_tokens: 0 }), call(302, now - 29_000), call(303, now + 3_600_000))
    for (const t of [lite, pg]) {
      for (const [token, part] of [[ALICE, calls.slice(0, 200)], [BOB, calls.slice(150)]] as const) {
        const r = await postJson(`${t.url}/api/ingest`, { calls: part }, { authorization: `Bearer ${token}` })
        expect(r.status).toBe(200)
        expect(r.json().rejected).toEqual([])
      }
      // Revisions: some calls re-priced on alice.
      const revised = calls.slice(0, 40).map((c, i) => ({ ...c, revision: i + 1, cost_usd: c.cost_usd * 2, priced: true, output_tokens: c.output_tokens + 5 }))
      const r = await postJson(`${t.url}/api/ingest`, { calls: revised }, { authorization: `Bearer ${ALICE}` })
      expect(r.json().revised).toBe(40)
    }
    for (const path of [...paths(), '/metrics']) {
      // Read from both at once; once more if a minute (a 30-minute timeseries' bucket) turned between the two.
      let [a, b] = [await read(lite, path), await read(pg, path)]
      if (JSON.stringify(a) !== JSON.stringify(b)) [a, b] = [await read(lite, path), await read(pg, path)]
      expect(b, path).toEqual(a)
    }
  }, 240_000)
})
