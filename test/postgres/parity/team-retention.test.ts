import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestServer, startTestServer } from '../../support/server'
import { usePostgres } from '../../support/pg-harness'
import { variedCalls } from '../../dashboard/seed'
import { eventually, postJson } from '../../support/http'
import { TZ, compare, normalize, paths } from './common'

/** A team server on each store: ingest, revisions that move cost and tokens, retention, then a restart: the same answers. */
const h = usePostgres({ upstream: false })
const TOKEN = 'team-token-alice-parity-000001'
const now = Date.now()
const calls = variedCalls(900, now, 45, 21).sort((a, b) => a.ts - b.ts).map((c, i) => ({
  ...c, member: 'alice', billing: (i % 5 === 0 ? 'subscription' : 'api') as any,
  cost_usd: i % 5 === 0 ? 0.01 + (i % 3) * 0.001 : c.cost_usd,
}))
const wire = (c: any, id: number, revision?: number) => ({
  id, t: new Date(c.ts).toISOString(), provider: c.provider, model: c.model, api_key_hash: c.api_key_hash, key_hint: c.key_hint,
  tenant: c.tenant, agent: c.agent, session: c.session, status: c.status, streamed: false, input_tokens: c.input_tokens,
  output_tokens: c.output_tokens, cache_read_tokens: c.cache_read_tokens, cache_write_tokens: c.cache_write_tokens,
  reasoning_tokens: 0, cost_usd: c.cost_usd, priced: true, estimated: false, latency_ms: c.latency_ms, response_id: '',
  source: 'proxy', billing: c.billing, project: c.project, member: 'alice', ...(revision ? { revision } : {}),
})
const config: any = { timezone: TZ, team: { members: [{ name: 'alice', token: TOKEN }] } }
let lite: TestServer
let pg: TestServer
const ingest = async (t: TestServer, cs: unknown[]) => {
  for (let i = 0; i < cs.length; i += 200) {
    const r = await postJson(`${t.url}/api/ingest`, { calls: cs.slice(i, i + 200) }, { authorization: `Bearer ${TOKEN}` })
    expect(r.status).toBe(200)
  }
}
const count = async (t: TestServer) => (await (await import('../../dashboard/seed')).getJson(`${t.url}/api/dashboard/export?since=2000-01-01`)).body.calls.length
const noReport = (ps: string[]) => ps.filter((p) => !p.startsWith('report'))

beforeAll(async () => {
  lite = await startTestServer(config)
  pg = await h.server({ config, upstream: null })
}, 120_000)
afterAll(async () => { await lite?.cleanup() })

describe('team server parity: ingest, revisions, retention', () => {
  it('ingested calls agree', async () => {
    for (const t of [lite, pg]) await ingest(t, calls.map((c, i) => wire(c, i + 1)))
    expect(await count(lite)).toBe(900)
    expect(await count(pg)).toBe(900)
    expect(await compare(lite.url, pg.url, paths(), normalize)).toEqual([])
  }, 240_000)
  it('revisions agree (money and plan calls, tokens moved)', async () => {
    const revs = calls.flatMap((c, i) => (i % 3 === 0 ? [wire({ ...c, cost_usd: c.cost_usd * 2 + 0.003, input_tokens: c.input_tokens + 77, output_tokens: c.output_tokens + 5 }, i + 1, 1)] : []))
    for (const t of [lite, pg]) await ingest(t, revs)
    expect(await compare(lite.url, pg.url, paths(), normalize)).toEqual([])
  }, 240_000)
  it('after retention pruning and revisions of pruned and kept calls', async () => {
    const url = (pg.server.config as any).storage.url
    await lite.stop(); await pg.stop()
    const kept = { ...config, ledger: { retention_days: 32 } }
    lite = await startTestServer(kept, undefined, lite.dir)
    pg = await h.server({ url, config: kept, upstream: null, dir: pg.dir })
    for (const t of [lite, pg]) await eventually(async () => (await count(t)) < 900, 60_000)
    await eventually(async () => (await count(lite)) === (await count(pg)), 30_000)
    const revs = calls.flatMap((c, i) => (i % 3 === 1 ? [wire({ ...c, cost_usd: c.cost_usd + 0.01, input_tokens: c.input_tokens + 11 }, i + 1, 2)] : []))
    for (const t of [lite, pg]) await ingest(t, revs)
    expect(await compare(lite.url, pg.url, noReport(paths()), normalize)).toEqual([])
  }, 240_000)
  it('after a restart', async () => {
    lite = await lite.restart()
    pg = await pg.restart()
    expect(await compare(lite.url, pg.url, noReport(paths()), normalize)).toEqual([])
  }, 240_000)
})
