import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import BetterSqlite from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { INSERT_CALL_SQL, callValues } from '../../src/main/ledger/columns'
import { openDatabase } from '../../src/main/ledger/db'
import { silentLogger } from '../../src/main/log'
import { BACKLOG_EXACT, BACKLOG_EXACT_REVISED } from '../../src/main/team/backlog'
import { TeamSender } from '../../src/main/team/sender'
import { makeCall } from '../dashboard/seed'
import { eventually, request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

const ALICE = 'team-token-alice-further-7d2a'

/** `n` calls of this Burnrate's own; then `ingested` of them are made member bob's (a team server reporting further). */
function calls(db: Database.Database, n: number, ingested = false): void {
  const insert = db.prepare(INSERT_CALL_SQL)
  let first = 0
  db.transaction(() => {
    for (let i = 0; i < n; i++) {
      const id = Number(insert.run(callValues(makeCall({ ts: Date.now() - 60_000, cost_usd: 0.002 }), [])).lastInsertRowid)
      first ||= id
    }
  })()
  if (ingested) db.prepare("UPDATE calls SET member = 'bob', origin_id = id WHERE id >= ?").run(first)
}

/**
 * A team server reporting further (team.members and team.url) sends its own calls on, never the
 * ones it ingested. Its sender's cursor must move past those too: left at its last own call, each
 * send (every wake, and every 30 s idle) read every call ingested since, on the proxy's event loop
 * (about 0.1 s per million), and the team backlog in /api/health never came down to 0. So with
 * the revisions its members send (each stored with its sender's revision number): left after
 * its revision cursor, they were read again at each send (about 0.5 s per million).
 */
describe('a team server reporting further', () => {
  const cleanups: (() => unknown)[] = []
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c()
  })

  it('moves its cursor past the calls it ingested, and its backlog drains to 0', async () => {
    const team: TestServer = await startTestServer({ timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }] } })
    cleanups.push(() => team.cleanup())
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-further-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const db = openDatabase(join(dir, 'burnrate.db'))
    cleanups.push(() => db.close())
    calls(db, 3) // ids 1..3: its own
    calls(db, BACKLOG_EXACT + 5_000, true) // bob's, ingested here
    const newest = () => db.prepare('SELECT max(id) FROM calls').pluck().get() as number
    const held = () => {
      const t = new BetterSqlite(team.dbFile, { readonly: true })
      try {
        return t.prepare("SELECT count(*) FROM calls WHERE member = 'alice'").pluck().get() as number
      } finally {
        t.close()
      }
    }

    const sender = new TeamSender({ db, url: team.url, token: ALICE, batchSize: 500, maxBackoffMs: 60_000, log: silentLogger }).start()
    cleanups.push(() => sender.stop())
    await eventually(() => (held() === 3 && sender.status().sent === 3) || undefined)
    const cursor = () => db.prepare('SELECT last_id FROM team_cursor').pluck().get() as number
    await eventually(() => cursor() === newest() || undefined)
    expect(sender.status().backlog).toBe(0)

    // Its next own call goes too; the ingested ones never do.
    calls(db, 1)
    sender.wake()
    await eventually(() => (held() === 4 && sender.status().backlog === 0) || undefined)
    expect(sender.status().sent).toBe(4)
    await eventually(() => cursor() === newest() || undefined)
  })

  it("moves its revision cursor past its members' revisions", async () => {
    const team: TestServer = await startTestServer({ timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }] } })
    cleanups.push(() => team.cleanup())
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-further-rev-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const db = openDatabase(join(dir, 'burnrate.db'))
    cleanups.push(() => db.close())
    calls(db, 3) // its own
    const sender = new TeamSender({ db, url: team.url, token: ALICE, batchSize: 500, maxBackoffMs: 60_000, log: silentLogger }).start()
    cleanups.push(() => sender.stop())
    await eventually(() => sender.status().sent === 3 || undefined)
    // Then bob's calls come in with their revisions (bob's own numbers, above this ledger's).
    calls(db, BACKLOG_EXACT_REVISED + 500, true)
    db.prepare('UPDATE calls SET revision = 9 WHERE origin_id IS NOT NULL').run()
    const newest = db.prepare('SELECT max(id) FROM calls').pluck().get() as number
    sender.wake()
    const cursor = () => db.prepare('SELECT last_id, revision, revision_id FROM team_cursor').get() as { last_id: number; revision: number; revision_id: number }
    await eventually(() => (cursor().revision === 9 && cursor().revision_id === newest) || undefined)
    expect(cursor().last_id).toBe(newest)
    expect(sender.status().backlog).toBe(0)
    expect(sender.status().sent).toBe(3)
  })

  it('prunes the old calls it ingested once its own are sent (ledger.retention_days)', async () => {
    const DAY = 86_400_000
    const team: TestServer = await startTestServer({ timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }] } })
    cleanups.push(() => team.cleanup())
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-further-prune-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const db = openDatabase(join(dir, 'burnrate.db'))
    const insert = db.prepare(INSERT_CALL_SQL)
    // Its own call today (id 1); bob's five calls 40 days old (2..6) and his last, today (7).
    insert.run(callValues(makeCall({ ts: Date.now() - 1000, cost_usd: 0.5, session: '' }), []))
    for (let i = 0; i < 5; i++) insert.run(callValues(makeCall({ ts: Date.now() - 40 * DAY + i, cost_usd: 1, session: '' }), []))
    insert.run(callValues(makeCall({ ts: Date.now() - 500, cost_usd: 1, session: '' }), []))
    db.prepare("UPDATE calls SET member = 'bob', origin_id = id WHERE id > 1").run()
    db.close()
    const bob = 'team-token-bob-further-prune-91c4'
    const config = { timezone: 'UTC', ledger: { retention_days: 32 }, team: { url: team.url, token: ALICE, members: [{ name: 'bob', token: bob }] } }
    const further = await startTestServer(config, undefined, dir)
    cleanups.push(() => further.cleanup())
    await eventually(async () => (await request(`${further.url}/api/health`)).json().team.sent === 1 || undefined)
    await further.server.ledger.prune(Date.now() - 32 * DAY, 1000, team.url)
    const left = new BetterSqlite(further.dbFile, { readonly: true })
    try {
      expect(left.prepare('SELECT id FROM calls ORDER BY id').pluck().all()).toEqual([1, 7])
    } finally {
      left.close()
    }
  })
})
