import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestPostgres, startPostgres } from '../../../../test/support/postgres'
import { makeCall, rng, variedCalls } from '../../../../test/dashboard/seed'
import { CALL_COLUMNS } from '../../ledger/columns'
import { openDatabase } from '../../ledger/db'
import type { CallRecord } from '../../ledger/record'
import { PostgresStore } from '../../storage/postgres'
import { migratePostgres } from '../../storage/postgres-migrations'
import type { SqlReader, SqlStore } from '../../storage/sql'
import { SqliteStore } from '../../storage/sqlite'
import { decodeMap } from '../histogram'
import { applyRollups } from './apply'
import { RollupWriter } from './writer'

type Row = CallRecord & { id: number }

const TABLES: Record<string, string> = {
  dash_5m: 'bucket, tenant',
  dash_hour: 'bucket, tenant',
  dash_day: 'bucket, tenant',
  dash_dim_hour: 'dim, bucket, tenant, key, provider',
  dash_dim_day: 'dim, bucket, tenant, key, provider',
  dash_session: 'tenant, agent, session',
}

/** Every rollup row, in key order, histograms decoded (bin → count). */
async function dump(s: SqlReader): Promise<Record<string, Record<string, unknown>[]>> {
  const out: Record<string, Record<string, unknown>[]> = {}
  for (const [t, key] of Object.entries(TABLES)) {
    const order = key
      .split(', ')
      .map((c) => (c === 'bucket' || s.dialect === 'sqlite' ? c : `${c} COLLATE "C"`))
      .join(', ')
    out[t] = (await s.all<Record<string, unknown>>(`SELECT * FROM ${t} ORDER BY ${order}`)).map((r) =>
      r.latency_hist === undefined ? r : { ...r, latency_hist: Object.fromEntries(decodeMap(r.latency_hist as Buffer)) },
    )
  }
  return out
}

/** Integers and text exactly; fractions (money, latency sums) to 1e-9 relative, being summed in another order. */
function expectSameRollups(got: Record<string, Record<string, unknown>[]>, want: Record<string, Record<string, unknown>[]>): void {
  for (const t of Object.keys(TABLES)) {
    expect(got[t].length, t).toBe(want[t].length)
    want[t].forEach((w, i) => {
      const g = got[t][i]
      for (const [k, v] of Object.entries(w)) {
        if (typeof v === 'number' && !Number.isInteger(v)) {
          expect(Math.abs((g[k] as number) - v), `${t}[${i}].${k}`).toBeLessThanOrEqual(1e-9 * Math.abs(v))
        } else expect(g[k], `${t}[${i}].${k}`).toEqual(v)
      }
    })
  }
}

const COLS = ['id', ...CALL_COLUMNS] as const
async function insertCalls(tx: SqlStore, all: readonly Row[]): Promise<void> {
  for (let at = 0; at < all.length; at += 500) await insertChunk(tx, all.slice(at, at + 500))
}
async function insertChunk(tx: SqlStore, rows: readonly Row[]): Promise<void> {
  const params: Record<string, unknown> = {}
  const tuples = rows.map((r, i) => {
    for (const c of COLS) {
      const v = (r as unknown as Record<string, unknown>)[c]
      params[`${c}_${i}`] = typeof v === 'boolean' ? (v ? 1 : 0) : v ?? (c === 'error' ? null : c === 'source' ? 'proxy' : c === 'billing' ? 'api' : '')
    }
    return `(${COLS.map((c) => `@${c}_${i}`).join(', ')})`
  })
  await tx.run(`INSERT INTO calls (${COLS.join(', ')}) VALUES ${tuples.join(', ')}`, params)
}

/**
 * Calls crowded into a few totals rows (two hours, two tenants), so batches collide there: each
 * run of 30 calls (one batch) has its own 5-minute bucket, model, provider, agent, session, key
 * and project, so two batches in flight do not queue behind each other on any other row but meet
 * on the hour and day rows whose histograms they merge.
 */
function crowdedCalls(n: number, start: number): Row[] {
  const r = rng(42)
  const out: Row[] = []
  for (let i = 0; i < n; i++) {
    const k = Math.floor(i / 30)
    out.push({
      ...makeCall({
        ts: start + (k % 24) * 300_000 + Math.floor(r() * 300_000),
        tenant: r() < 0.5 ? '' : 'acme',
        provider: `p${k}`,
        model: `m${k}`,
        agent: `a${k}`,
        session: `s${k}`,
        api_key_hash: `k${k}`,
        project: `/p${k}`,
        status: r() < 0.1 ? 500 : 200,
        cost_usd: r() * 0.01,
        latency_ms: 5 + r() * 20_000,
        input_tokens: Math.floor(r() * 1000),
        billing: r() < 0.1 ? 'subscription' : 'api',
      }),
      id: i + 1,
    })
  }
  return out
}

let pg: TestPostgres
beforeAll(async () => {
  pg = await startPostgres()
}, 120_000)
afterAll(() => pg?.stop())

describe('applyRollups', () => {
  it('on SQLite writes exactly what the RollupWriter writes, batch for batch', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-apply-'))
    const a = openDatabase(join(dir, 'a.db'))
    const b = openDatabase(join(dir, 'b.db'))
    try {
      const rows = variedCalls(3000, Date.now(), 3, 9).map((c, i) => ({ ...c, id: i + 1 }))
      const writer = new RollupWriter(a)
      const store = new SqliteStore(b)
      for (let i = 0; i < rows.length; i += 97) {
        const batch = rows.slice(i, i + 97)
        a.transaction(() => writer.onBatch(batch))()
        await store.transaction((tx) => applyRollups(tx, batch))
      }
      const want = await dump(new SqliteStore(a))
      expect(want.dash_dim_hour.length).toBeGreaterThan(100)
      expect(await dump(store)).toEqual(want)
    } finally {
      a.close()
      b.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('on PostgreSQL, two instances applying interleaved batches to the same rows at once end with the totals of the calls', async () => {
    const url = pg.createDatabase()
    const one = new PostgresStore(url, { max: 4 })
    const two = new PostgresStore(url, { max: 4 })
    const ref = new PostgresStore(pg.createDatabase(), { max: 1 })
    try {
      await Promise.all([migratePostgres(one), migratePostgres(two), migratePostgres(ref)])
      const rows = crowdedCalls(6000, Date.UTC(2026, 10, 23, 22, 30))
      // Batches of 30 dealt in turn to the two instances, each writing with three transactions in flight.
      const queues: Row[][][] = [[], []]
      for (let i = 0; i < rows.length; i += 30) queues[(i / 30) % 2].push(rows.slice(i, i + 30))
      const worker = async (store: PostgresStore, queue: Row[][]) => {
        for (let batch = queue.shift(); batch; batch = queue.shift()) {
          const b = batch
          await store.transaction(async (tx) => {
            await insertCalls(tx, b)
            await applyRollups(tx, b)
          })
        }
      }
      await Promise.all([0, 1, 2].flatMap(() => [worker(one, queues[0]), worker(two, queues[1])]))

      // The totals equal the calls'.
      const calls = (await one.get<{ n: number; cost: number; lat: number }>(
        `SELECT count(*) AS n, sum(CASE WHEN billing = 'subscription' THEN 0 ELSE cost_usd END) AS cost, sum(latency_ms) AS lat FROM calls`,
      ))!
      expect(calls.n).toBe(rows.length)
      for (const t of ['dash_5m', 'dash_hour', 'dash_day']) {
        const s = (await one.get<{ n: number; cost: number }>(`SELECT sum(requests) AS n, sum(cost_usd) AS cost FROM ${t}`))!
        expect(s.n, t).toBe(rows.length)
        expect(Math.abs(s.cost - calls.cost)).toBeLessThan(1e-9 * calls.cost)
      }
      const hist = await one.all<{ requests: number; latency_hist: Buffer }>('SELECT requests, latency_hist FROM dash_hour')
      for (const h of hist) expect([...decodeMap(h.latency_hist).values()].reduce((x, y) => x + y, 0)).toBe(h.requests)
      const dims = await one.all<{ dim: string; n: number }>('SELECT dim, sum(requests) AS n FROM dash_dim_day GROUP BY dim')
      expect(dims.map((d) => d.n)).toEqual(dims.map(() => rows.length))
      expect((await one.get<{ n: number }>('SELECT sum(requests) AS n FROM dash_session'))!.n).toBe(rows.length)

      // And every rollup row equals that of the same calls applied in one batch by one instance.
      await ref.transaction(async (tx) => {
        await insertCalls(tx, rows)
        await applyRollups(tx, rows)
      })
      expectSameRollups(await dump(one), await dump(ref))
    } finally {
      await Promise.all([one.close(), two.close(), ref.close()])
    }
  }, 300_000)
})
