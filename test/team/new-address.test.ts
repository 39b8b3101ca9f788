import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { INSERT_CALL_SQL, callValues } from '../../src/main/ledger/columns'
import { openDatabase } from '../../src/main/ledger/db'
import { markRevised } from '../../src/main/ledger/revisions'
import { silentLogger } from '../../src/main/log'
import { SqliteStore } from '../../src/main/storage/sqlite'
import { TeamSender } from '../../src/main/team/sender'
import { makeCall } from '../dashboard/seed'
import { eventually, request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

const ALICE = 'team-token-alice-new-address-01'

/**
 * The same team server under a new address (moved to another host name, or team.url spelt
 * another way): the member starts a new cursor there and sends every call again as it is now,
 * which the team server takes as duplicates of what it holds. Calls re-priced on the member
 * before the switch, whose revisions the old address never acknowledged, must still reach it:
 * what the team server holds is the cost first sent.
 */
describe('a team server reached at a new address', () => {
  const cleanups: (() => unknown)[] = []
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c()
  })

  it('gets the revisions the old address never acknowledged', async () => {
    const team: TestServer = await startTestServer({ timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }] } })
    cleanups.push(() => team.cleanup())
    // The new address: another way to the same team server.
    const relay = http.createServer(async (req, res) => {
      const parts: Buffer[] = []
      for await (const c of req) parts.push(c as Buffer)
      const r = await fetch(team.url + req.url, { method: req.method, headers: req.headers as Record<string, string>, body: Buffer.concat(parts) })
      res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' }).end(Buffer.from(await r.arrayBuffer()))
    })
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r))
    cleanups.push(() => new Promise((r) => relay.close(r)))
    const moved = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`

    const dir = mkdtempSync(join(tmpdir(), 'burnrate-new-address-'))
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

    // Sent to the first address, and acknowledged.
    const first = new TeamSender({ db, url: team.url, token: ALICE, batchSize: 500, maxBackoffMs: 500, log: silentLogger }).start()
    await eventually(() => first.status().backlog === 0 && first.status().sent === 2)
    await first.stop()
    // Re-priced on the member while nothing is sent (the team server unreachable, the desktop closed).
    const store = new SqliteStore(db)
    db.prepare('UPDATE calls SET cost_usd = 0.05 WHERE id = 1').run()
    await store.transaction((tx) => markRevised(tx, [1]))
    db.prepare('UPDATE calls SET cost_usd = 0.03 WHERE id = 2').run()
    await store.transaction((tx) => markRevised(tx, [2]))

    // team.url now names the new address: the calls go again, then the revision.
    const again = new TeamSender({ db, url: moved, token: ALICE, batchSize: 500, maxBackoffMs: 500, log: silentLogger }).start()
    cleanups.push(() => again.stop())
    await eventually(() => again.status().backlog === 0 && again.status().sent >= 2)
    expect(again.status().rejected).toBe(0)
    expect(teamRows()).toEqual([{ origin_id: 1, cost_usd: 0.05 }, { origin_id: 2, cost_usd: 0.03 }])
    const costs = (await request(`${team.url}/api/dashboard/costs?group_by=member&range=24h`)).json()
    expect(costs.rows.map((x: any) => [x.key, x.requests, x.cost_usd])).toEqual([['alice', 2, 0.05 + 0.03]])
  })
})
