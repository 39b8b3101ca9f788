import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { DB_FILE } from '../../src/main/config/paths'
import { RollupWriter } from '../../src/main/dashboard/rollup/writer'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import { PRUNE_BATCH, PRUNE_SCAN, RetentionPruner, pruneCalls, retentionCutoff } from '../../src/main/ledger/retention'
import { eventually } from '../support/http'
import { makeCall } from '../dashboard/seed'

const DAY = 86_400_000
const MINUTE = 60_000

const cleanups: (() => void | Promise<void>)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

/**
 * Bytes this process has read through read()/pread() so far (Linux). A SQLite connection with a
 * cold page cache (and no mmap: better-sqlite3's default) reads each page it touches this way, so
 * the difference around a synchronous statement is how much of the file it went through: a
 * measure of its work that does not depend on the machine's speed.
 */
function bytesRead(): number {
  return Number(/^rchar: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))![1])
}

/**
 * A ledger whose old calls (older than the retention) are mostly kept: an always-on agent whose
 * one session is still in use (a call a minute for `days` days, the last one now), with `loose`
 * calls outside any session among the oldest, which may go.
 */
function ledgerWith(now: number, days: number, loose: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-retention-cost-'))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  const db = openDatabase(join(dir, DB_FILE))
  const ledger = new Ledger(db, { flushIntervalMs: 50, maxPending: 10_000_000, timezone: 'UTC' })
  const writer = new RollupWriter(db)
  ledger.onBatch((b) => writer.onBatch(b))
  const first = now - days * DAY
  for (let i = 0; i < loose; i++) ledger.record(makeCall({ ts: first - (loose - i) * MINUTE, cost_usd: 0.002 }))
  for (let t = first; t <= now; t += MINUTE) {
    ledger.record(makeCall({ ts: t, session: 'always-on', cost_usd: 0.001 }))
    if ((t - first) % (20_000 * MINUTE) === 0) ledger.flush()
  }
  ledger.flush()
  ledger.close()
  db.close()
  return join(dir, DB_FILE)
}

/** One retention step on a freshly opened connection (its page cache cold): what it deleted and the bytes it read. */
function step(file: string, before: number): { deleted: number; read: number } {
  const db = openDatabase(file)
  try {
    const start = bytesRead()
    const deleted = pruneCalls(db, before, PRUNE_BATCH)
    return { deleted, read: bytesRead() - start }
  } finally {
    db.close()
  }
}

describe.skipIf(!existsSync('/proc/self/io'))("a retention step's own cost", () => {
  it('does not grow with the old calls retention keeps (a session still in use): each step reads about as much as on a small ledger', () => {
    const now = Date.now()
    const cutoff = retentionCutoff(32, now)
    const small = ledgerWith(now, 40, 50)
    const big = ledgerWith(now, 400, 50)
    const a = step(small, cutoff)
    const b = step(big, cutoff)
    // Both delete the loose calls, which are the oldest.
    expect(a.deleted).toBe(50)
    expect(b.deleted).toBe(50)
    // The big ledger keeps ~530,000 old calls of the live session: a step that reads past each of
    // them holds the write lock (and, without the write thread, the event loop) for about a second.
    const again = step(big, cutoff)
    expect(again.deleted).toBe(0)
    expect(b.read).toBeLessThan(a.read * 4 + 2_000_000)
    expect(again.read).toBeLessThan(a.read * 4 + 2_000_000)
  }, 300_000)

  it('goes on from where the last step stopped, through calls of one instant, and deletes every call it may, once, whatever kept ones lie between', () => {
    const now = Date.now()
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-retention-cost-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const db = openDatabase(join(dir, DB_FILE))
    const ledger = new Ledger(db, { flushIntervalMs: 50, maxPending: 1_000_000, timezone: 'UTC' })
    const writer = new RollupWriter(db)
    ledger.onBatch((b) => writer.onBatch(b))
    cleanups.push(() => {
      ledger.close()
      db.close()
    })
    // A batch's 12,000 results dated at one instant 40 days ago, every third in a session still in
    // use (its last call now), among older and newer old calls.
    const instant = now - 40 * DAY
    for (let i = 0; i < 3000; i++) ledger.record(makeCall({ ts: instant - DAY + i * MINUTE, session: i % 2 ? 'live' : '' }))
    for (let i = 0; i < 12_000; i++) ledger.record(makeCall({ ts: instant, session: i % 3 === 0 ? 'live' : '' }))
    for (let i = 0; i < 3000; i++) ledger.record(makeCall({ ts: instant + DAY + i * MINUTE, session: i % 5 === 0 ? 'live' : '' }))
    ledger.record(makeCall({ ts: now, session: 'live' }))
    ledger.flush()
    const kept = db.prepare("SELECT id FROM calls WHERE session = 'live' ORDER BY id").pluck().all()
    const cutoff = retentionCutoff(32, now)
    const steps: number[] = []
    for (let n; (n = pruneCalls(db, cutoff, 200)) > 0; ) steps.push(n)
    expect(steps.every((n) => n <= 200)).toBe(true)
    expect(steps.reduce((a, b) => a + b, 0)).toBe(1500 + 8000 + 2400)
    expect(db.prepare('SELECT id FROM calls ORDER BY id').pluck().all()).toEqual(kept)
  })

  it('goes on soon after a step that stopped among kept calls, not at the idle delay: the calls past them are pruned too', async () => {
    const now = Date.now()
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-retention-cost-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const db = openDatabase(join(dir, DB_FILE))
    const ledger = new Ledger(db, { flushIntervalMs: 50, maxPending: 1_000_000, timezone: 'UTC' })
    const writer = new RollupWriter(db)
    ledger.onBatch((b) => writer.onBatch(b))
    cleanups.push(() => {
      ledger.close()
      db.close()
    })
    // Three steps' worth of old calls of a session still in use, then 600 old calls that may go.
    const first = now - 300 * DAY
    for (let i = 0; i < 3 * PRUNE_SCAN; i++) ledger.record(makeCall({ ts: first + i * MINUTE, session: 'live' }))
    for (let i = 0; i < 600; i++) ledger.record(makeCall({ ts: now - 100 * DAY + i * MINUTE }))
    ledger.record(makeCall({ ts: now, session: 'live' }))
    ledger.flush()
    const pruner = new RetentionPruner({
      days: 32,
      busyDelayMs: 0,
      idleDelayMs: 3_600_000,
      now: () => now,
      prune: (b, limit) => ledger.prune(b, limit),
      unfinished: () => ledger.pruneUnfinished,
    }).start()
    cleanups.push(() => pruner.stop())
    await eventually(() => pruner.deleted === 600, 20_000)
    expect(db.prepare("SELECT count(*) FROM calls WHERE session = ''").pluck().get()).toBe(0)
  })
})
