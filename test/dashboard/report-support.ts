import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { afterEach, expect } from 'vitest'
import { DB_FILE } from '../../src/main/config/paths'
import { adjustRollups } from '../../src/main/dashboard/rollup/adjust'
import { reportZone } from '../../src/main/dashboard/rollup/report'
import { ensureReportZone } from '../../src/main/dashboard/rollup/report-build'
import { RollupWriter } from '../../src/main/dashboard/rollup/writer'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import type { CallRecord } from '../../src/main/ledger/record'
import { type Report, type ReportQuery, buildReport } from '../../src/main/report/report'
import { SqliteStore } from '../../src/main/storage/sqlite'

/** Ledgers and folders of the report tests, closed and removed after each test. */
export const dirs: string[] = []
export const dbs: Database.Database[] = []
afterEach(() => {
  for (const db of dbs.splice(0)) db.close()
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

/** A temp folder, removed after the test. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-report-'))
  dirs.push(dir)
  return dir
}

/**
 * A ledger written the server's way, its report rollup built for `tz` before the calls arrive
 * (`tz` null: not built, as by a release before the report rollup).
 */
export function ledgerWith(rows: CallRecord[], tz: string | null): Database.Database {
  const dir = tempDir()
  const db = openDatabase(join(dir, DB_FILE))
  dbs.push(db)
  if (tz !== null) ensureReportZone(db, tz)
  const ledger = new Ledger(db, { flushIntervalMs: 50, maxPending: 1_000_000, timezone: tz ?? 'UTC' })
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
export function report(db: Database.Database, q: ReportQuery): Promise<Report> {
  return buildReport(new SqliteStore(db), q, reportZone(db))
}

/** The straightforward report: every call summed from `calls` (what buildReport does without the rollup). */
export function rawReport(db: Database.Database, q: ReportQuery): Promise<Report> {
  return buildReport(new SqliteStore(db), q, null)
}

export function expectSameReport(got: Report, want: Report, what: string): void {
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


/** Re-prices every third call (twice its cost plus a cent) the way the pricing updater does: the calls and the rollups in one transaction. */
export async function repriceEveryThird(db: Database.Database): Promise<void> {
  const rows = db.prepare('SELECT * FROM calls WHERE id % 3 = 0').all() as any[]
  await new SqliteStore(db).transaction(async (tx) => {
    for (const r of rows) db.prepare('UPDATE calls SET cost_usd = cost_usd * 2 + 0.01 WHERE id = ?').run(r.id)
    await adjustRollups(tx, rows.map((r) => ({ ...r, delta: r.cost_usd + 0.01 })))
  })
}
