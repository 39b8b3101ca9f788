import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { DB_FILE } from '../../src/main/config/paths'
import { loadConfig } from '../../src/main/config/load'
import { health } from '../../src/main/health'
import { openDatabase } from '../../src/main/ledger/db'
import { MIGRATIONS, migrate } from '../../src/main/ledger/migrations'
import { silentLogger } from '../../src/main/log'
import { createBurnrate } from '../../src/main/server/server'
import { type TestServer, startTestServer } from '../support/server'
import { getJson, makeCall, rng, variedCalls } from './seed'

const COLUMNS = [
  'ts', 'provider', 'model', 'endpoint', 'api_key_hash', 'key_hint', 'tenant', 'agent', 'session', 'status',
  'streamed', 'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'cache_write_1h_tokens',
  'reasoning_tokens', 'cost_usd', 'priced', 'estimated', 'latency_ms', 'error',
]

let t: TestServer | null = null
const dirs: string[] = []
afterEach(async () => {
  await t?.cleanup()
  t = null
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

async function expectMatchesCalls(url: string, dbFile: string) {
  const raw = new Database(dbFile, { readonly: true })
  try {
    const since = Date.now() - 30 * 86_400_000
    const want = raw.prepare('SELECT model k, provider p, count(*) n, total(cost_usd) c FROM calls WHERE ts >= ? GROUP BY 1, 2').all(since) as any[]
    const got = (await getJson(`${url}/api/dashboard/costs?group_by=model&range=30d`)).body.rows
    expect(got).toHaveLength(want.length)
    for (const w of want) {
      const g = got.find((r: any) => r.key === w.k && r.provider === w.p)
      expect(g.requests).toBe(w.n)
      expect(g.cost_usd).toBeCloseTo(w.c, 12)
    }
    const n = raw.prepare('SELECT count(*) FROM calls WHERE ts >= ?').pluck().get(Date.now() - 7 * 86_400_000)
    expect((await getJson(`${url}/api/dashboard/stats?range=7d`)).body.total_requests).toBe(n)
    const sessions = raw.prepare(`SELECT count(*) FROM (SELECT max(ts) m FROM calls WHERE session != '' GROUP BY tenant, agent, session) WHERE m > ?`).pluck().get(Date.now() - 86_400_000)
    expect((await getJson(`${url}/api/dashboard/sessions?limit=1000`)).body.sessions).toHaveLength(sessions as number)
  } finally {
    raw.close()
  }
}

describe('rollups of calls recorded before they existed', () => {
  it('migration 2 builds them from a ledger written by schema 1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-dash-'))
    const db = new Database(join(dir, DB_FILE))
    migrate(db, MIGRATIONS.filter((m) => m.version === 1))
    const insert = db.prepare(`INSERT INTO calls (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')})`)
    db.transaction(() => {
      for (const c of variedCalls(3000, Date.now(), 35, 3)) {
        insert.run(COLUMNS.map((k) => ((c as any)[k] === true ? 1 : (c as any)[k] === false ? 0 : (c as any)[k])))
      }
    })()
    db.close()
    // Opening it runs migration 2, which alone fills the rollups.
    const migrated = openDatabase(join(dir, DB_FILE))
    expect(migrated.prepare('SELECT total(requests) FROM dash_hour').pluck().get()).toBe(3000)
    expect(migrated.prepare('SELECT last_call_id FROM dash_state').pluck().get()).toBe(3000)
    migrated.close()
    t = await startTestServer({ timezone: 'UTC' }, undefined, dir)
    const v = new Database(t.dbFile, { readonly: true })
    expect(v.pragma('user_version', { simple: true })).toBeGreaterThanOrEqual(2)
    v.close()
    await expectMatchesCalls(t.url, t.dbFile)
  })

  it('calls recorded by a server without the dashboard feature are folded in at the next start', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-dash-'))
    dirs.push(dir)
    const config = loadConfig({ dataDir: dir }, {})
    const bare = createBurnrate({ ...config, server: { ...config.server, port: 0 } }, { log: silentLogger, features: [health] })
    for (const c of variedCalls(2000, Date.now(), 10, 5)) bare.ledger.record(c)
    await bare.close()
    t = await startTestServer({ timezone: 'UTC' }, undefined, dir)
    await expectMatchesCalls(t.url, t.dbFile)
    // And from then on the batch writer keeps them in step.
    t.server.ledger.record(makeCall({ model: 'fresh-model', cost_usd: 3 }))
    const rows = (await getJson(`${t.url}/api/dashboard/costs`)).body.rows
    expect(rows.find((r: any) => r.key === 'fresh-model')).toMatchObject({ requests: 1, cost_usd: 3 })
    await expectMatchesCalls(t.url, t.dbFile)
  })
})

describe('percentiles over many calls', () => {
  it('above 10,000 calls in the window, p50 and p95 come from the histograms within 1%', async () => {
    t = await startTestServer({ timezone: 'UTC' })
    const r = rng(11)
    const N = 12_000
    const lat = Array.from({ length: N }, (_, i) => i + 1 + r() * 0.5)
    const now = Date.now()
    // Spread over 20 h so most come from hourly rollups and some from the raw edges.
    lat.forEach((l) => t!.server.ledger.record(makeCall({ ts: now - 60_000 - Math.floor(r() * 20 * 3_600_000), latency_ms: l })))
    const sorted = [...lat].sort((a, b) => a - b)
    const exact = (p: number) => sorted[Math.ceil(p * N) - 1]
    const s = (await getJson(`${t.url}/api/dashboard/stats?range=24h`)).body
    expect(s.total_requests).toBe(N)
    expect(Math.abs(s.p50_latency_ms / exact(0.5) - 1)).toBeLessThan(0.01)
    expect(Math.abs(s.p95_latency_ms / exact(0.95) - 1)).toBeLessThan(0.01)
    expect(s.avg_latency_ms).toBeCloseTo(lat.reduce((a, b) => a + b, 0) / N, 6)
  })
})
