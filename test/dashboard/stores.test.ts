import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { GROUP_BYS, RANGES } from '../../src/shared/api'
import { ProviderStats } from '../../src/main/admin/provider-stats'
import { SessionInference } from '../../src/main/agents/sessions'
import { LOOP_REASON, REFUSAL_REASON } from '../../src/main/budgets/gate'
import { DB_FILE } from '../../src/main/config/paths'
import { costs } from '../../src/main/dashboard/costs'
import type { DashDeps } from '../../src/main/dashboard/deps'
import { expensive } from '../../src/main/dashboard/expensive'
import { streamExport } from '../../src/main/dashboard/export'
import { applyRollups } from '../../src/main/dashboard/rollup/apply'
import { RollupWriter } from '../../src/main/dashboard/rollup/writer'
import { sessions } from '../../src/main/dashboard/sessions'
import { EXACT_PERCENTILE_MAX, stats } from '../../src/main/dashboard/stats'
import { summary } from '../../src/main/dashboard/summary'
import { timeseries } from '../../src/main/dashboard/timeseries'
import { unpriced } from '../../src/main/dashboard/unpriced'
import { CALL_COLUMNS } from '../../src/main/ledger/columns'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import type { CallRecord } from '../../src/main/ledger/record'
import { SpendTracker } from '../../src/main/ledger/spend'
import { Pricer } from '../../src/main/pricing/price'
import { repriceModel } from '../../src/main/pricing/reprice'
import { REPORT_KINDS, buildReport } from '../../src/main/report/report'
import { PostgresStore } from '../../src/main/storage/postgres'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import type { SqlReader, SqlStore } from '../../src/main/storage/sql'
import { SqliteStore } from '../../src/main/storage/sqlite'
import { startOfDay } from '../../src/main/time/zone'
import { usePostgres } from '../support/pg-harness'
import { makeCall, variedCalls } from './seed'

/**
 * One storage interface, two implementations: the same calls recorded into a SQLite ledger (the
 * real Ledger with its RollupWriter) and into a PostgreSQL database (migrated, rows inserted and
 * `applyRollups` in each batch's transaction, in other batches) give the same answer from every
 * dashboard endpoint, the export (byte for byte), the report and the admin's provider status.
 * Money and other sums of fractions to 1e-9 relative (summed in another order), the rest exactly.
 */

const TZ = 'Asia/Kolkata' // +05:30: local midnight is not on a UTC hour, so every period has raw edges
const TENANTS = [null, 'acme', 'globex', 'nobody'] as const

const h = usePostgres({ upstream: false })
let dir: string
let lite: SqliteStore
let pgs: PostgresStore
let now: number
let recorded = 0

/** The seed: varied calls over 35 days (more than 10,000 in 30 days, so stats read the histograms), plus edge cases. */
function seedCalls(at: number): CallRecord[] {
  const calls = variedCalls(13_000, at, 35, 11)
  const h = Math.floor((at - 3 * 3_600_000) / 3_600_000) * 3_600_000
  for (const ts of [h - 1, h, h + 1, h + 300_000 - 1, h + 300_000]) calls.push({ ...calls[0], ts, cost_usd: 0.125 })
  calls.slice(1, 31).forEach((c, i) => calls.push({ ...c, tenant: ['', 'acme', 'globex'][i % 3], ts: at - 60_000 - i * 45_000 }))
  // Unpriced calls, subscription calls (plan value, not money), imported calls and refused calls.
  for (let i = 0; i < 40; i++) {
    calls.push(makeCall({ ts: at - 90_000 - i * 3_600_000, provider: 'openrouter', model: `m-${i % 3}`, priced: false, cost_usd: 0, tenant: i % 2 ? 'acme' : '' }))
    calls.push(makeCall({ ts: at - 120_000 - i * 1_800_000, billing: 'subscription', cost_usd: 0.01 * (i + 1), agent: 'claude-code', session: `sub-${i % 4}` }))
    calls.push(makeCall({ ts: at - 150_000 - i * 7_200_000, source: 'import', agent: 'codex', session: `imp-${i % 5}`, project: '/home/dev/x' }))
    calls.push(makeCall({ ts: at - 30_000 - i * 1_000, status: 429, error: i % 2 ? REFUSAL_REASON : LOOP_REASON, cost_usd: 0 }))
  }
  // Inferred sessions still open (SessionInference seeds from them), and text that collations order differently.
  for (let i = 0; i < 6; i++) {
    calls.push(makeCall({ ts: at - 60_000 * (i + 1), agent: 'aider', api_key_hash: `k${i % 3}`, session: `auto-${String(i).repeat(12)}` }))
    calls.push(makeCall({ ts: at - 70_000, agent: 'aider', session: ['Zeta', 'alpha', '_x', 'Alpha', 'zeta', 'é'][i], tenant: 'globex' }))
  }
  return calls
}

/** The same calls in a new SQLite ledger (the real Ledger and RollupWriter) and a new PostgreSQL database (inserts and applyRollups, in other batches). */
async function seedBoth(calls: readonly CallRecord[]): Promise<{ db: Database.Database; lite: SqliteStore; pgs: PostgresStore; url: string }> {
  // SQLite: the real ledger and its rollup writer, in batches of varied sizes.
  const db = openDatabase(join(dir, `${dbs++}-${DB_FILE}`))
  const ledger = new Ledger(db, { flushIntervalMs: 60_000, maxPending: 1_000_000, timezone: TZ })
  const writer = new RollupWriter(db)
  ledger.onBatch((rows) => writer.onBatch(rows), 'rollups')
  calls.forEach((c, i) => {
    ledger.record(c)
    if (i % 137 === 136) ledger.flush()
  })
  expect(ledger.close()).toBe(true)

  // PostgreSQL: the same rows (ids too) in batches of another size, rollups in each batch's transaction.
  const url = h.database()
  const pgs = h.store(url)
  await migratePostgres(pgs)
  const rows = db.prepare('SELECT * FROM calls ORDER BY id').all() as (CallRecord & { id: number })[]
  for (let i = 0; i < rows.length; i += 500) {
    const batch = rows.slice(i, i + 500)
    await pgs.transaction(async (tx) => {
      await insertCalls(tx, batch)
      await applyRollups(tx, batch)
    })
  }
  return { db, lite: new SqliteStore(db), pgs, url }
}
let dbs = 0
const opened: { db: Database.Database; pgs: PostgresStore }[] = []

beforeAll(async () => {
  dir = h.tempDir('burnrate-stores-')
  // The seed's newest calls are minutes before `now`, and the summary and provider status count
  // today's: keep `now` two hours or more into a local day of TZ (Asia/Kolkata's midnight is 18:30 UTC).
  const real = Date.now()
  now = real - startOfDay(real, TZ) < 2 * 3_600_000 ? real - 2 * 3_600_000 : real
  const calls = seedCalls(now)
  recorded = calls.length
  const seeded = await seedBoth(calls)
  opened.push(seeded)
  ;({ lite, pgs } = seeded)
}, 300_000)

// The SQLite ledgers (the harness closes the PostgreSQL stores, then removes `dir`).
afterAll(() => {
  for (const o of opened) o.db.close()
})

const COLS = ['id', ...CALL_COLUMNS] as const
async function insertCalls(tx: SqlStore, rows: readonly object[]): Promise<void> {
  const params: Record<string, unknown> = {}
  const tuples = rows.map((r, i) => {
    for (const c of COLS) params[`${c}_${i}`] = (r as Record<string, unknown>)[c]
    return `(${COLS.map((c) => `@${c}_${i}`).join(', ')})`
  })
  await tx.run(`INSERT INTO calls (${COLS.join(', ')}) VALUES ${tuples.join(', ')}`, params)
}

/** Where two answers differ: integers and text exactly, fractions to 1e-9 relative. */
function differences(a: unknown, b: unknown, path = '', out: string[] = []): string[] {
  if (typeof a === 'number' && typeof b === 'number') {
    const same = Number.isInteger(a) && Number.isInteger(b) ? a === b : Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b))
    if (!same) out.push(`${path}: ${a} != ${b}`)
  } else if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) out.push(`${path}: ${a.length} items != ${b.length}`)
    else a.forEach((x, i) => differences(x, b[i], `${path}[${i}]`, out))
  } else if (a && b && typeof a === 'object' && typeof b === 'object') {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)])
    for (const k of keys) differences((a as any)[k], (b as any)[k], `${path}.${k}`, out)
  } else if (a !== b) out.push(`${path}: ${JSON.stringify(a)} != ${JSON.stringify(b)}`)
  return out
}

const deps = (q: SqlReader): DashDeps => ({ q, tz: TZ })

/** Answers the same from both stores (and returns SQLite's, to check it is not empty). */
async function same<T>(f: (d: DashDeps) => Promise<T>): Promise<T> {
  const want = await f(deps(lite))
  const got = await f(deps(pgs))
  expect(differences(want, got)).toEqual([])
  return want
}

describe('the dashboard API on SQLite and on PostgreSQL', () => {
  it('both ledgers hold every call', async () => {
    const n = async (s: SqlReader) => (await s.get<{ n: number }>('SELECT count(*) AS n FROM calls'))!.n
    expect(await n(lite)).toBe(recorded)
    expect(await n(pgs)).toBe(recorded)
  })

  it('summary', async () => {
    for (const tenant of TENANTS) {
      const s = await same((d) => summary(d, tenant, now))
      if (tenant === null) {
        expect(s.today_requests).toBeGreaterThan(0)
        expect(s.month_plan_value_usd).toBeGreaterThan(0)
        expect(s.active_sessions).toBeGreaterThan(0)
      }
    }
  })

  it('timeseries, every range', async () => {
    for (const tenant of TENANTS) {
      for (const range of RANGES) {
        const t = await same((d) => timeseries(d, range, tenant, now))
        if (tenant === null) expect(t.points.some((p) => p.requests > 0)).toBe(true)
      }
    }
  })

  it('costs, every grouping and range, with and without the (other) row', async () => {
    for (const tenant of TENANTS) {
      for (const range of RANGES) {
        for (const g of GROUP_BYS) {
          const c = await same((d) => costs(d, g, range, tenant, now, 1000))
          if (tenant === null) expect(c.rows.length).toBeGreaterThan(0)
          await same((d) => costs(d, g, range, tenant, now, 2))
        }
      }
    }
  })

  it('sessions', async () => {
    for (const tenant of TENANTS) {
      const s = await same((d) => sessions(d, tenant, now, 1000))
      if (tenant === 'globex') expect(s.sessions.map((x) => x.session)).toEqual(expect.arrayContaining(['Zeta', 'alpha', 'é']))
      await same((d) => sessions(d, tenant, now, 5))
    }
  })

  it('expensive, every range', async () => {
    for (const tenant of TENANTS) {
      for (const range of RANGES) {
        const e = await same((d) => expensive(d, range, 100, tenant, now))
        if (tenant === null) expect(e.requests.length).toBeGreaterThan(0)
      }
    }
  })

  it('stats, every range (exact percentiles and, above 10,000 calls, the histograms)', async () => {
    for (const tenant of TENANTS) {
      for (const range of RANGES) {
        const s = await same((d) => stats(d, range, tenant, now))
        if (tenant === null && range === '30d') expect(s.total_requests).toBeGreaterThan(EXACT_PERCENTILE_MAX)
      }
    }
  })

  it('unpriced', async () => {
    for (const tenant of TENANTS) {
      const u = await same((d) => unpriced(d, tenant))
      if (tenant === null) expect(u.models.map((m) => m.model).sort()).toEqual(['m-0', 'm-1', 'm-2'])
    }
  })

  it('report, every kind, with and without a window', async () => {
    const windows = [
      { since: null, until: null },
      { since: startOfDay(now - 9 * 86_400_000, TZ), until: startOfDay(now - 2 * 86_400_000, TZ) },
    ]
    for (const tenant of [null, 'acme']) {
      for (const kind of REPORT_KINDS) {
        for (const w of windows) {
          const r = await same((d) => buildReport(d.q, { kind, ...w, tenant, timezone: TZ }))
          expect(r.rows.length).toBeGreaterThan(0)
        }
      }
    }
  })
})

describe('the export on SQLite and on PostgreSQL', () => {
  let server: http.Server
  let base = ''
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const u = new URL(req.url ?? '/', 'http://x')
      const q = u.searchParams.get('store') === 'pg' ? pgs : lite
      const tenant = u.searchParams.get('tenant')
      const format = u.searchParams.get('format') === 'csv' ? 'csv' : 'json'
      void streamExport(deps(q), res, format, '30d', tenant, now)
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  })
  afterAll(() => new Promise<void>((r) => server.close(() => r())))

  const get = async (query: string) => {
    const r = await fetch(base + '?' + query)
    expect(r.status).toBe(200)
    return r.text()
  }

  for (const format of ['json', 'csv']) {
    it(`${format}: the same bytes, every call of the window in keyset pages`, async () => {
      for (const tenant of [null, 'acme']) {
        const q = `format=${format}${tenant ? `&tenant=${tenant}` : ''}`
        const want = await get(`${q}&store=sqlite`)
        const got = await get(`${q}&store=pg`)
        // More calls than one page (2,000), so the keyset paging is crossed many times.
        const n = format === 'json' ? JSON.parse(want).calls.length : want.split('\r\n').length - 2
        expect(n).toBeGreaterThan(tenant ? 2_000 : 10_000)
        expect(got.length).toBe(want.length)
        expect(got === want).toBe(true)
      }
    })
  }
})

describe('the admin API and start-up reads on SQLite and on PostgreSQL', () => {
  it("provider status: today's proxied calls of each provider (not imported or a member's), refused calls left out", async () => {
    const a = new ProviderStats(TZ)
    const b = new ProviderStats(TZ)
    await a.seed(lite, now)
    await b.seed(pgs, now)
    const providers = ['openai', 'anthropic', 'google', 'openrouter']
    const want = providers.map((p) => a.get(p, now) ?? null)
    expect(want.filter(Boolean).length).toBeGreaterThan(1)
    const todays = (await lite.get<{ n: number }>(
      `SELECT count(*) AS n FROM calls WHERE ts >= @start AND ts < @now AND source = 'proxy' AND origin_id IS NULL AND (error IS NULL OR error NOT IN ('budget_exceeded', 'loop_detected'))`,
      { start: startOfDay(now, TZ), now },
    ))!.n
    expect(want.reduce((s, d) => s + (d?.requests ?? 0), 0)).toBe(todays)
    expect(differences(want, providers.map((p) => b.get(p, now) ?? null))).toEqual([])
  })

  it('inferred sessions still open are picked up from either store', async () => {
    const a = new SessionInference()
    const b = new SessionInference()
    await a.seed(lite, now)
    await b.seed(pgs, now)
    expect(a.size).toBe(3)
    expect(b.size).toBe(3)
    for (const k of ['k0', 'k1', 'k2']) {
      const s = a.assign('aider', k, now)
      expect(s).toMatch(/^auto-(\d)\1{11}$/)
      expect(b.assign('aider', k, now)).toBe(s)
    }
  })
})

describe('re-pricing on SQLite and on PostgreSQL', () => {
  const MODEL = 'new-model'
  const pricer = new Pricer([{ provider: 'openai', model: MODEL, input_mtok: 3, output_mtok: 12 }])
  /** Calls of a model recorded before it had a price, spread over a month, tenants, agents and projects. */
  const unpricedCalls = (at: number) =>
    variedCalls(1500, at, 30, 5).map((c, i) =>
      i % 3 === 0 ? { ...c, provider: 'openai', model: MODEL, priced: false, cost_usd: 0, billing: i % 9 === 0 ? ('subscription' as const) : ('api' as const) } : c,
    )
  const spendOf = () => ({ flushed: async () => true, spend: new SpendTracker(TZ) })

  it('re-prices the same calls, and every answer moves the same way (project grouping too)', async () => {
    const at = Date.now()
    const s = await seedBoth(unpricedCalls(at))
    opened.push(s)
    const want = await repriceModel(s.lite, spendOf(), pricer, 'openai', 'openai', MODEL, false)
    const got = await repriceModel(s.pgs, spendOf(), pricer, 'openai', 'openai', MODEL, false)
    expect(want.repriced).toBeGreaterThan(400)
    expect(differences(want, got)).toEqual([])
    const both = async <T>(f: (d: DashDeps) => Promise<T>) => {
      const a = await f(deps(s.lite))
      expect(differences(a, await f(deps(s.pgs)))).toEqual([])
      return a
    }
    // The rollups moved with the calls: each grouping of 30 days adds up to the calls' money.
    const money = (await s.lite.get<{ c: number }>(
      `SELECT sum(CASE WHEN billing = 'subscription' THEN 0 ELSE cost_usd END) AS c FROM calls WHERE ts >= @since`,
      { since: at - 30 * 86_400_000 },
    ))!.c
    for (const g of GROUP_BYS) {
      const c = await both((d) => costs(d, g, '30d', null, at, 1000))
      const sum = c.rows.reduce((x, r) => x + r.cost_usd, 0)
      expect(Math.abs(sum - money), g).toBeLessThan(1e-9 * money)
    }
    await both((d) => summary(d, null, at))
    await both((d) => timeseries(d, '30d', null, at))
    await both((d) => sessions(d, null, at, 1000))
  })

  it('two instances re-pricing one PostgreSQL ledger at once count each call once', async () => {
    const at = Date.now()
    const s = await seedBoth(unpricedCalls(at))
    opened.push(s)
    const other = new PostgresStore(s.url)
    try {
      const [a, b] = await Promise.all([
        repriceModel(s.pgs, spendOf(), pricer, 'openai', 'openai', MODEL, false),
        repriceModel(other, spendOf(), pricer, 'openai', 'openai', MODEL, false),
      ])
      const alone = await repriceModel(s.lite, spendOf(), pricer, 'openai', 'openai', MODEL, false)
      expect(a.repriced + b.repriced).toBe(alone.repriced)
      expect(Math.abs(a.cost_usd_after + b.cost_usd_after - alone.cost_usd_after)).toBeLessThan(1e-9 * alone.cost_usd_after)
      const byModel = async (q: SqlReader) =>
        (await q.get<{ c: number }>(`SELECT sum(cost_usd) AS c FROM dash_dim_day WHERE dim = 'model' AND key = @m`, { m: MODEL }))!.c
      const calls = (await s.pgs.get<{ c: number }>(`SELECT sum(CASE WHEN billing = 'subscription' THEN 0 ELSE cost_usd END) AS c FROM calls WHERE model = @m`, { m: MODEL }))!.c
      expect(Math.abs((await byModel(s.pgs)) - calls)).toBeLessThan(1e-9 * calls)
      expect(Math.abs((await byModel(s.lite)) - calls)).toBeLessThan(1e-9 * calls)
    } finally {
      await other.close()
    }
  })
})
