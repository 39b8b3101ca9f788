import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { DB_FILE } from '../../src/main/config/paths'
import { adjustRollups } from '../../src/main/dashboard/rollup/adjust'
import { ensureReportZone, reportZone } from '../../src/main/dashboard/rollup/report'
import { RollupWriter } from '../../src/main/dashboard/rollup/writer'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import type { CallRecord } from '../../src/main/ledger/record'
import { pruneCalls } from '../../src/main/ledger/retention'
import { REPORT_KINDS, type Report, type ReportQuery, buildReport, parseWhen } from '../../src/main/report/report'
import { SqliteStore } from '../../src/main/storage/sqlite'
import { makeCall, rng } from './seed'

const DAY = 86_400_000
const ZONES = ['UTC', 'Europe/Berlin', 'Asia/Kolkata', 'America/St_Johns']

const dirs: string[] = []
const dbs: Database.Database[] = []
afterEach(() => {
  for (const db of dbs.splice(0)) db.close()
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

function calls(now: number, n: number, days: number, seed = 5): CallRecord[] {
  const r = rng(seed)
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]
  const out: CallRecord[] = []
  for (let i = 0; i < n; i++) {
    out.push(
      makeCall({
        ts: now - Math.floor(r() * days * DAY),
        provider: pick(['openai', 'anthropic']),
        model: pick(['m-a', 'm-b', 'm-c', 'm-d']),
        tenant: pick(['', 'acme', 'globex']),
        agent: pick(['', 'codex', 'aider', 'claude-code']),
        session: pick(['', 's-1', 's-2', 's-3', 's-4', 's-5']),
        project: pick(['', '/src/a', '/src/b']),
        source: r() < 0.2 ? 'import' : 'proxy',
        billing: r() < 0.15 ? 'subscription' : 'api',
        input_tokens: Math.floor(r() * 9000),
        output_tokens: Math.floor(r() * 900),
        cache_read_tokens: Math.floor(r() * 500),
        cache_write_tokens: Math.floor(r() * 50),
        cost_usd: r() * 0.2,
      }),
    )
  }
  return out.sort((a, b) => a.ts - b.ts)
}

/** A ledger written the server's way, its report rollup built for `tz` before the calls arrive. */
function ledgerWith(rows: CallRecord[], tz: string): Database.Database {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-report-'))
  dirs.push(dir)
  const db = openDatabase(join(dir, DB_FILE))
  dbs.push(db)
  ensureReportZone(db, tz)
  const ledger = new Ledger(db, { flushIntervalMs: 50, maxPending: 1_000_000, timezone: tz })
  const writer = new RollupWriter(db)
  ledger.onBatch((b) => writer.onBatch(b))
  for (let i = 0; i < rows.length; i += 400) {
    for (const c of rows.slice(i, i + 400)) ledger.record(c)
    ledger.flush()
  }
  ledger.close()
  return db
}

/** The report as the server builds it: whole days from the rollup when it is kept in the report's zone. */
function report(db: Database.Database, q: ReportQuery): Promise<Report> {
  return buildReport(new SqliteStore(db), q, reportZone(db))
}

/** The straightforward report: every call summed from `calls` (what buildReport does without the rollup). */
function rawReport(db: Database.Database, q: ReportQuery): Promise<Report> {
  return buildReport(new SqliteStore(db), q, null)
}

function expectSameReport(got: Report, want: Report, what: string): void {
  const close = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b))
  expect(got.rows.map((r) => r.key), what).toEqual(want.rows.map((r) => r.key))
  for (const [i, w] of want.rows.entries()) {
    const g = got.rows[i]
    const { cost_usd: gc, ...gRest } = g
    const { cost_usd: wc, ...wRest } = w
    expect(gRest, `${what} ${w.key}`).toEqual(wRest)
    expect(close(gc, wc), `${what} ${w.key} cost ${gc} vs ${wc}`).toBe(true)
  }
  expect(close(got.totals.cost_usd, want.totals.cost_usd), what).toBe(true)
  expect({ ...got.totals, cost_usd: 0 }).toEqual({ ...want.totals, cost_usd: 0 })
}

describe('report from the report rollup', () => {
  it('gives the same answer as summing the calls, for every kind, zone, window and tenant', async () => {
    const now = Date.UTC(2026, 10, 23, 10, 7)
    for (const tz of ZONES) {
      const db = ledgerWith(calls(now, 2500, 75, tz.length), tz)
      const windows: [number | null, number | null][] = [
        [null, null],
        [parseWhen('2026-10-01', tz), null],
        [parseWhen('2026-09-20', tz), parseWhen('2026-10-15', tz, true)],
        // ISO times in the middle of days: partial days at both edges are read from calls.
        [Date.UTC(2026, 8, 30, 13, 41), Date.UTC(2026, 9, 29, 2, 3)],
        [Date.UTC(2026, 9, 10, 3), Date.UTC(2026, 9, 10, 9)],
      ]
      for (const kind of REPORT_KINDS) {
        for (const [since, until] of windows) {
          for (const tenant of [null, 'acme']) {
            const q: ReportQuery = { kind, since, until, tenant, timezone: tz }
            expectSameReport(await report(db, q), await rawReport(db, q), `${tz} ${kind} ${since}-${until} ${tenant}`)
          }
        }
      }
    }
  })

  it('still answers for days whose raw calls retention pruned', async () => {
    const now = Date.now()
    const tz = 'Europe/Berlin'
    const db = ledgerWith(calls(now, 3000, 200, 9), tz)
    const before = await Promise.all(REPORT_KINDS.map((kind) => report(db, { kind, since: null, until: null, tenant: null, timezone: tz })))
    while (pruneCalls(db, now - 40 * DAY, 500) > 0);
    expect(db.prepare('SELECT min(ts) FROM calls').pluck().get()).toBeGreaterThanOrEqual(now - 40 * DAY)
    for (const [i, kind] of REPORT_KINDS.entries()) {
      expectSameReport(await report(db, { kind, since: null, until: null, tenant: null, timezone: tz }), before[i], kind)
    }
  })

  it('is rebuilt for a new zone, and the CLI (another zone) falls back to the calls', async () => {
    const now = Date.UTC(2026, 10, 23, 10, 7)
    const db = ledgerWith(calls(now, 1500, 30, 3), 'UTC')
    expect(ensureReportZone(db, 'Asia/Kolkata')).toBe(1500)
    expect(ensureReportZone(db, 'Asia/Kolkata')).toBe(0)
    for (const tz of ['Asia/Kolkata', 'America/New_York']) {
      for (const kind of REPORT_KINDS) {
        const q: ReportQuery = { kind, since: null, until: null, tenant: null, timezone: tz }
        expectSameReport(await report(db, q), await rawReport(db, q), `${tz} ${kind}`)
      }
    }
  })

  it('re-pricing moves the report and the per-project costs with the calls', async () => {
    const now = Date.UTC(2026, 10, 23, 10, 7)
    const tz = 'Europe/Berlin'
    const db = ledgerWith(calls(now, 800, 20, 4), tz)
    const rows = db.prepare('SELECT * FROM calls WHERE id % 3 = 0').all() as any[]
    await new SqliteStore(db).transaction(async (tx) => {
      for (const r of rows) db.prepare('UPDATE calls SET cost_usd = cost_usd * 2 + 0.01 WHERE id = ?').run(r.id)
      await adjustRollups(tx, rows.map((r) => ({ ...r, delta: r.cost_usd + 0.01 })))
    })
    for (const kind of REPORT_KINDS) {
      const q: ReportQuery = { kind, since: null, until: null, tenant: null, timezone: tz }
      expectSameReport(await report(db, q), await rawReport(db, q), kind)
    }
    const money = "CASE WHEN billing = 'subscription' THEN 0 ELSE cost_usd END"
    const want = db.prepare(`SELECT project k, total(${money}) c FROM calls GROUP BY project ORDER BY project`).all() as any[]
    for (const table of ['dash_dim_hour', 'dash_dim_day']) {
      const got = db.prepare(`SELECT key k, total(cost_usd) c FROM ${table} WHERE dim = 'project' GROUP BY key ORDER BY key`).all() as any[]
      expect(got.map((g) => g.k)).toEqual(want.map((w) => w.k))
      for (const [i, w] of want.entries()) expect(got[i].c).toBeCloseTo(w.c, 9)
    }
  })
})
