import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { DB_FILE } from '../../src/main/config/paths'
import { RollupWriter } from '../../src/main/dashboard/rollup/writer'
import { sessions } from '../../src/main/dashboard/sessions'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import { pruneStepOn } from '../../src/main/ledger/retention'
import { SqliteStore } from '../../src/main/storage/sqlite'
import { makeCall } from './seed'

// A listed session whose first call is older than what retention pruned before said how many of
// its requests were pruned by counting the calls it kept, at every request of the sessions list:
// one table row read per kept call. A team server or CI bot using one session name for months (a
// million kept calls) took 2 s of the list's every answer for it (3.3 s the whole answer). Retention
// now adds each session's pruned requests to its rollup row as it prunes, and the list reads them there.

const DAY = 86_400_000
const MINUTE = 60_000

const cleanups: (() => void)[] = []
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c()
})

/** Bytes this process has read through read()/pread() so far (Linux): a cold connection's pages read (see test/core/retention-cost.test.ts). */
function bytesRead(): number {
  return Number(/^rchar: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))![1])
}

/**
 * A team server's ledger: one session (`ci`) with `old` calls 40 days ago and `kept` since the last
 * 30 days up to now, a session of two calls 40 days ago resumed now, one wholly kept, and calls of no
 * session; every call ingested from a member (pruned by age alone), then retention (32 days) run to its end.
 */
function prunedLedger(now: number, old: number, kept: number): { file: string; deleted: number } {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-session-pruned-cost-'))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, DB_FILE)
  const db = openDatabase(file)
  const ledger = new Ledger(db, { flushIntervalMs: 50, maxPending: 10_000_000, timezone: 'UTC' })
  const writer = new RollupWriter(db)
  ledger.onBatch((b) => writer.onBatch(b))
  const record = (ts: number, session: string) => ledger.record(makeCall({ ts, agent: 'ci-bot', session, cost_usd: 0.001 }))
  for (let i = 0; i < old; i++) record(now - 40 * DAY + i * MINUTE, 'ci')
  record(now - 40 * DAY, 'resumed')
  record(now - 40 * DAY + MINUTE, 'resumed')
  record(now - 39 * DAY, '')
  for (let i = 0; i < kept; i++) {
    record(now - 30 * DAY + Math.floor((i * 30 * DAY) / kept), 'ci')
    if (i % 20_000 === 0) ledger.flush()
  }
  record(now - 2 * DAY, 'kept')
  record(now - 10 * MINUTE, 'kept')
  record(now - 5 * MINUTE, 'resumed')
  ledger.flush()
  ledger.close()
  db.exec("UPDATE calls SET origin_id = id, member = 'alice'")
  // The first call of `ci` superseded (an imported call the proxy's record of the same answer
  // replaced: no request, as ../../src/main/dashboard/rollup/adjust.ts leaves its row): pruned, none of its requests.
  db.exec("UPDATE calls SET superseded_by = (SELECT max(id) FROM calls) WHERE id = (SELECT min(id) FROM calls WHERE session = 'ci')")
  db.exec("UPDATE dash_session SET requests = requests - 1 WHERE session = 'ci'")
  let deleted = 0
  for (;;) {
    const r = pruneStepOn(db, now - 32 * DAY, 500)
    deleted += r.deleted
    if (r.deleted === 0 && !r.more) break
  }
  db.close()
  return { file, deleted }
}

/**
 * A team server's ledger where `agents` agents share one session name (`main`), each with 5 calls
 * 40 days ago and `kept` since, pruned to its end by retention (32 days), then left as an earlier
 * build had it (schema version 34: no count on the session rows).
 */
function sharedNameLedger(now: number, agents: number, kept: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-session-pruned-shared-'))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, DB_FILE)
  const db = openDatabase(file)
  const ledger = new Ledger(db, { flushIntervalMs: 50, maxPending: 10_000_000, timezone: 'UTC' })
  const writer = new RollupWriter(db)
  ledger.onBatch((b) => writer.onBatch(b))
  for (let a = 0; a < agents; a++) {
    for (let i = 0; i < 5; i++) ledger.record(makeCall({ ts: now - 40 * DAY + i * MINUTE, agent: `agent-${a}`, session: 'main', cost_usd: 0.001 }))
    for (let i = 0; i < kept; i++) {
      ledger.record(makeCall({ ts: now - 30 * DAY + Math.floor((i * 30 * DAY) / kept), agent: `agent-${a}`, session: 'main', cost_usd: 0.001 }))
    }
    ledger.flush()
  }
  ledger.close()
  db.exec("UPDATE calls SET origin_id = id, member = 'alice'")
  for (;;) {
    const r = pruneStepOn(db, now - 32 * DAY, 500)
    if (r.deleted === 0 && !r.more) break
  }
  db.exec('ALTER TABLE dash_session DROP COLUMN pruned_requests')
  db.pragma('user_version = 34')
  db.pragma('wal_checkpoint(TRUNCATE)')
  db.close()
  return file
}

/** The sessions list on a freshly opened connection (its page cache cold), and the bytes it read. */
async function listed(file: string, now: number): Promise<{ rows: Awaited<ReturnType<typeof sessions>>['sessions']; read: number }> {
  const db = openDatabase(file)
  try {
    const start = bytesRead()
    const r = await sessions({ q: new SqliteStore(db), tz: 'UTC' }, null, now)
    return { rows: r.sessions, read: bytesRead() - start }
  } finally {
    db.close()
  }
}

describe("the sessions list's pruned requests of a long session", () => {
  it('SQLite: read from the session rows, not by reading every kept call; the same numbers', async () => {
    const now = Date.now()
    const { file, deleted } = prunedLedger(now, 300, 40_000)
    expect(deleted).toBe(300 + 2 + 1)
    const { rows, read } = await listed(file, now)
    const by = Object.fromEntries(rows.map((r) => [r.session, r]))
    expect(by.ci).toMatchObject({ requests: 40_299, pruned_requests: 299, unpriced_requests: 0 })
    expect(by.resumed).toMatchObject({ requests: 3, pruned_requests: 2 })
    expect(by.kept).toMatchObject({ requests: 2, pruned_requests: 0 })
    // The 40,000 kept calls' rows are some 10 MB; the session rows and their index a few pages.
    expect(read).toBeLessThan(1_000_000)
  })

  it('SQLite: a ledger an earlier build pruned gets its sessions\' pruned requests once, at the upgrade', async () => {
    const now = Date.now()
    const { file } = prunedLedger(now, 30, 100)
    // As an earlier build left it: no count on the session rows (schema version 34).
    const db = openDatabase(file)
    db.exec('ALTER TABLE dash_session DROP COLUMN pruned_requests')
    db.pragma('user_version = 34')
    db.close()
    const { rows } = await listed(file, now)
    const by = Object.fromEntries(rows.map((r) => [r.session, r]))
    expect(by.ci).toMatchObject({ requests: 129, pruned_requests: 29 })
    expect(by.resumed).toMatchObject({ requests: 3, pruned_requests: 2 })
    expect(by.kept).toMatchObject({ requests: 2, pruned_requests: 0 })
  })

  it("SQLite: the upgrade reads a session name's kept calls once, not once per agent sharing it", async () => {
    const now = Date.now()
    const agents = 20
    const file = sharedNameLedger(now, agents, 5_000)
    // The migration (35) runs as the ledger is opened, on a cold connection.
    const start = bytesRead()
    openDatabase(file).close()
    const read = bytesRead() - start
    const { rows } = await listed(file, now)
    expect(rows).toHaveLength(agents)
    for (const r of rows) expect(r).toMatchObject({ session: 'main', requests: 5_005, pruned_requests: 5 })
    // The 100,000 kept calls' rows are some 25 MB, past SQLite's page cache: read once (26 MB), not
    // once per agent (513 MB before, 30 s for 50 agents sharing a name in a ledger of a million calls).
    expect(read).toBeLessThan(80_000_000)
  })
})
