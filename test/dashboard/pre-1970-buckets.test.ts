import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { DB_FILE } from '../../src/main/config/paths'
import { backfillDimRollups } from '../../src/main/dashboard/rollup/backfill'
import { TIERS } from '../../src/main/dashboard/rollup/schema'
import { RollupWriter } from '../../src/main/dashboard/rollup/writer'
import { unpricedByBucket } from '../../src/main/dashboard/unpriced-counts'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import { SqliteStore } from '../../src/main/storage/sqlite'
import { makeCall } from './seed'

/**
 * Buckets start at multiples of their size since the epoch, floored (the rollup writer, the
 * timeseries' buckets, the report's quarter hours). The unpriced calls per bucket and the
 * migrations' backfill of a grouping divided in SQL, which truncates toward zero: a call stamped
 * before 1970 (a member's ingest may carry one) was counted in the bucket after its own, so the
 * timeseries put it one bucket late and the backfilled grouping rows disagreed with the totals.
 */

const MIN = 60_000
const HOUR = 3_600_000
let dir = ''
let db: Database.Database | null = null
afterEach(() => {
  db?.close()
  db = null
  if (dir) rmSync(dir, { recursive: true, force: true })
})

function ledgerWith(stamps: readonly number[], over: Parameters<typeof makeCall>[0] = {}): Database.Database {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-pre1970-'))
  const d = openDatabase(join(dir, DB_FILE))
  const ledger = new Ledger(d, { flushIntervalMs: 60_000, maxPending: 1_000, timezone: 'UTC' })
  const writer = new RollupWriter(d)
  ledger.onBatch((rows) => writer.onBatch(rows), 'rollups')
  for (const ts of stamps) ledger.record(makeCall({ ts, project: '/home/dev/p', ...over }))
  ledger.flush()
  return d
}

// A minute before 1970, half an hour before, and one after.
const STAMPS = [-MIN, -30 * MIN, MIN]

describe('buckets of calls stamped before 1970', () => {
  it('count unpriced calls in the bucket that holds them (floored)', async () => {
    db = ledgerWith(STAMPS, { provider: 'openrouter', model: 'mystery-1', priced: false, cost_usd: 0 })
    const got = await unpricedByBucket(new SqliteStore(db), { start: -HOUR, end: HOUR }, 15 * MIN, null)
    expect([...got].sort((a, b) => a[0] - b[0])).toEqual([[-30 * MIN, 1], [-15 * MIN, 1], [0, 1]])
  })

  it('backfill a grouping into the buckets the rollup writer uses', () => {
    db = ledgerWith(STAMPS)
    const read = () => TIERS.map((t) => db!.prepare(
      `SELECT bucket, requests, cost_usd FROM ${t.dims} WHERE dim = 'project' ORDER BY bucket`).all())
    const written = read()
    expect(written[1]).toEqual([{ bucket: -HOUR, requests: 2, cost_usd: 0.002 }, { bucket: 0, requests: 1, cost_usd: 0.001 }])
    backfillDimRollups(db, 'project', 'project')
    expect(read()).toEqual(written)
  })
})
