import { mkdtempSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { INSERT_CALL_SQL, callValues } from '../../src/main/ledger/columns'
import { openDatabase } from '../../src/main/ledger/db'
import { BACKLOG_EXACT as EXACT, BACKLOG_EXACT_REVISED as EXACT_REVISED, Backlog } from '../../src/main/team/backlog'
import { makeCall } from '../dashboard/seed'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * `team.backlog` in `GET /api/health` is answered on the proxy's event loop at every health call
 * (the dashboard polls it): it must read a bounded number of rows however many calls are unsent
 * (a new team.url on a ledger of millions), exact while small, and beyond that the documented
 * upper bound (README: Reporting to a team server, Status). The ledger below is built so that the
 * exact count and the bound differ: calls this Burnrate ingested as a team server (`origin_id`,
 * never sent on) lie among its unsent and its revised calls, and only a bounded read counts them.
 */
const ALICE = 'team-token-alice-backlog-5c1e'

async function freePort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()))
  const port = (s.address() as { port: number }).port
  await new Promise((r) => s.close(r))
  return port
}

/** `n` calls of this Burnrate's own, then the id of the last. */
function own(db: Database.Database, n: number): number {
  const insert = db.prepare(INSERT_CALL_SQL)
  let id = 0
  db.transaction(() => {
    for (let i = 0; i < n; i++) id = Number(insert.run(callValues(makeCall({ cost_usd: 0.002 }), [])).lastInsertRowid)
  })()
  return id
}

/** `n` calls ingested from member bob (a team server reporting further), then the id of the last. */
function ingested(db: Database.Database, n: number, revision: number | null = null): number {
  const last = own(db, n)
  db.prepare("UPDATE calls SET member = 'bob', origin_id = id, revision = ? WHERE id > ?").run(revision, last - n)
  return last
}

describe('the team backlog in /api/health', () => {
  const servers: TestServer[] = []
  afterAll(async () => {
    for (const s of servers.reverse()) await s.cleanup()
  })

  async function member(seed: (db: Database.Database, teamUrl: string) => void): Promise<TestServer> {
    const teamUrl = `http://127.0.0.1:${await freePort()}` // nothing listens: the backlog stays
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-team-backlog-'))
    const db = openDatabase(join(dir, 'burnrate.db'))
    seed(db, teamUrl)
    db.close()
    const s = await startTestServer({ timezone: 'UTC', team: { url: teamUrl, token: ALICE, max_backoff_ms: 60_000 } }, undefined, dir)
    servers.push(s)
    return s
  }
  const backlog = async (s: TestServer): Promise<number> => (await request(`${s.url}/api/health`)).json().team.backlog

  it('is exact while small', async () => {
    const s = await member((db, teamUrl) => {
      own(db, 30)
      db.prepare('UPDATE calls SET revision = 1 WHERE id <= 10').run()
      ingested(db, 5, 1)
      db.prepare('INSERT INTO team_cursor (url, last_id, updated_at, revision, revision_id) VALUES (?, 20, ?, 0, 0)').run(teamUrl, Date.now())
      ingested(db, 7)
      own(db, 4)
    })
    // 10 own calls after the cursor and 4 more; the 10 own revised calls sent before. Never bob's.
    expect(await backlog(s)).toBe(10 + 4 + 10)
  })

  it('beyond its exact reach, is the span of ids not yet sent and the revised calls in the index, without reading them all', async () => {
    let sent = 0
    const s = await member((db, teamUrl) => {
      // Sent: 1,900 own calls, 1,500 of them revised since, and 100 of bob's revised calls.
      own(db, 1_900)
      db.prepare('UPDATE calls SET revision = 1 WHERE id <= 1500').run()
      sent = ingested(db, 100, 1)
      db.prepare('INSERT INTO team_cursor (url, last_id, updated_at, revision, revision_id) VALUES (?, ?, ?, 0, 0)').run(teamUrl, sent, Date.now())
      // Unsent: EXACT + 500 own calls, 300 of bob's, 200 own.
      own(db, EXACT + 500)
      ingested(db, 300)
      own(db, 200)
    })
    // Exact, these would be EXACT + 700 unsent and 1,500 revised. The bound: EXACT counted, then
    // every id from the EXACT-th unsent call to the newest (bob's 300 included); the revised
    // calls' entries in the revision index (bob's 100 included), as more than EXACT_REVISED are.
    expect(EXACT_REVISED).toBeLessThan(1_500)
    expect(await backlog(s)).toBe(EXACT + 500 + 300 + 200 + 1_500 + 100)
  })
})

describe('the backlog beyond its exact reach (limits made small)', () => {
  const limits = { exact: 10, exactRevised: 5, revisionIndex: 20 }
  function ledger(): Database.Database {
    return openDatabase(join(mkdtempSync(join(tmpdir(), 'burnrate-backlog-')), 'burnrate.db'))
  }

  it('reads as many rows after the cursor, calls ingested as a team server included', () => {
    const db = ledger()
    ingested(db, 100) // ids 1..100: bob's, never sent on
    own(db, 5) // 101..105
    const b = new Backlog(db, limits)
    // Ten rows read (bob's, none counted), the span from the tenth to the newest after them.
    expect(b.count(0, { revision: 0, id: 0 })).toBe(95)
    // Within reach again once the cursor is past most of them: exact.
    expect(b.count(96, { revision: 0, id: 0 })).toBe(5)
    db.close()
  })

  it('bounds revised calls by the revision index, and beyond its reach by the last call sent', () => {
    const db = ledger()
    own(db, 100)
    const b = new Backlog(db, limits)
    db.prepare('UPDATE calls SET revision = 1 WHERE id <= 4').run()
    expect(b.count(100, { revision: 0, id: 0 })).toBe(4)
    // 17 revised (more than 5), 3 of them bob's, 2 not sent yet (counted as new calls): the 15
    // entries up to the cursor, bob's included (exact, it would be 12).
    db.prepare('UPDATE calls SET revision = 2 WHERE id BETWEEN 5 AND 15 OR id IN (99, 100)').run()
    db.prepare("UPDATE calls SET member = 'bob', origin_id = id WHERE id IN (13, 14, 15)").run()
    expect(b.count(98, { revision: 0, id: 0 })).toBe(2 + 15)
    // More than 20 entries after the revision cursor: at most the 50 calls up to the cursor.
    db.prepare('UPDATE calls SET revision = 3 WHERE id BETWEEN 20 AND 40').run()
    expect(b.count(50, { revision: 0, id: 0 })).toBe(50 + 50)
    // The revision cursor past most of them: exact again.
    expect(b.count(100, { revision: 3, id: 37 })).toBe(3)
    db.close()
  })
})
