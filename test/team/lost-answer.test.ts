import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { openDatabase } from '../../src/main/ledger/db'
import { markRevised } from '../../src/main/ledger/revisions'
import { silentLogger } from '../../src/main/log'
import { SqliteStore } from '../../src/main/storage/sqlite'
import { TeamSender } from '../../src/main/team/sender'
import { makeCall } from '../dashboard/seed'
import { eventually } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { INSERT_CALL_SQL, callValues } from '../../src/main/ledger/columns'

const ALICE = 'team-token-alice-lost-answer-01'

/**
 * The team server stores a member's batch but its answer is lost on the way (a timeout, the
 * desktop quitting). Before the member sends it again, its calls are re-priced there. After a
 * restart the member sends the batch again as first recorded, then the revisions: the team server
 * must end with the member's costs, and nothing be refused as a clash.
 */
describe('a batch whose answer was lost, its calls re-priced before it is sent again', () => {
  const cleanups: (() => unknown)[] = []
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c()
  })

  it("ends with the member's costs on the team server, nothing refused", async () => {
    const team: TestServer = await startTestServer({ timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }] } })
    cleanups.push(() => team.cleanup())
    // The way to the team server: it passes every request on, and loses the first answer.
    let lose = 1
    const relay = http.createServer(async (req, res) => {
      const parts: Buffer[] = []
      for await (const c of req) parts.push(c as Buffer)
      const r = await fetch(team.url + req.url, { method: req.method, headers: req.headers as Record<string, string>, body: Buffer.concat(parts) })
      const body = Buffer.from(await r.arrayBuffer())
      if (lose-- > 0) {
        res.destroy()
        return
      }
      res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' }).end(body)
    })
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r))
    cleanups.push(() => new Promise((r) => relay.close(r)))
    const url = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`

    const dir = mkdtempSync(join(tmpdir(), 'burnrate-lost-answer-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const db = openDatabase(join(dir, 'burnrate.db'))
    cleanups.push(() => db.close())
    const insert = db.prepare(INSERT_CALL_SQL)
    for (const cost of [0.01, 0.02]) insert.run(callValues(makeCall({ ts: Date.now() - 60_000, cost_usd: cost }), []))
    const teamRows = () => {
      const t = new Database(team.dbFile, { readonly: true })
      try {
        return t.prepare("SELECT origin_id, cost_usd FROM calls WHERE member = 'alice' ORDER BY origin_id").all()
      } finally {
        t.close()
      }
    }

    // The first sender sends the two calls; the team server stores them, its answer is lost.
    const first = new TeamSender({ db, url, token: ALICE, batchSize: 500, maxBackoffMs: 60_000, log: silentLogger }).start()
    await eventually(() => teamRows().length === 2 || undefined)
    await first.stop()
    // Re-priced on the member meanwhile (revisions 1 and 2).
    const store = new SqliteStore(db)
    db.prepare('UPDATE calls SET cost_usd = 0.05 WHERE id = 1').run()
    await store.transaction((tx) => markRevised(tx, [1]))
    db.prepare('UPDATE calls SET cost_usd = 0.03 WHERE id = 2').run()
    await store.transaction((tx) => markRevised(tx, [2]))

    // Started again: it sends the batch again, then the revisions the team server does not have.
    const again = new TeamSender({ db, url, token: ALICE, batchSize: 500, maxBackoffMs: 500, log: silentLogger }).start()
    cleanups.push(() => again.stop())
    await eventually(() => JSON.stringify(teamRows()) === JSON.stringify([{ origin_id: 1, cost_usd: 0.05 }, { origin_id: 2, cost_usd: 0.03 }]) || undefined)
    await eventually(() => again.status().backlog === 0 || undefined)
    expect(again.status().rejected).toBe(0)
  })
})
