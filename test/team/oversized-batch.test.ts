import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { INSERT_CALL_SQL, callValues } from '../../src/main/ledger/columns'
import { openDatabase } from '../../src/main/ledger/db'
import { silentLogger } from '../../src/main/log'
import { TeamSender } from '../../src/main/team/sender'
import { makeCall } from '../dashboard/seed'
import { eventually } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

const ALICE = 'team-token-alice-oversized-01'

/**
 * A batch whose body is larger than the team server takes (413, 8 MB: here 500 calls whose agent
 * sent a 20 KB model name, each refused upstream) must not stop the sender for good: every call
 * recorded after it would never reach the team server.
 */
describe('a batch larger than the team server takes', () => {
  const cleanups: (() => unknown)[] = []
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c()
  })

  it('is sent in smaller batches, and the calls after it reach the team server', async () => {
    const team: TestServer = await startTestServer({ timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }] } })
    cleanups.push(() => team.cleanup())
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-oversized-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const db = openDatabase(join(dir, 'burnrate.db'))
    cleanups.push(() => db.close())
    const insert = db.prepare(INSERT_CALL_SQL)
    const huge = 'x'.repeat(20_000)
    for (let i = 0; i < 500; i++) insert.run(callValues(makeCall({ model: huge, status: 404, cost_usd: 0, input_tokens: 0, output_tokens: 0 }), []))
    insert.run(callValues(makeCall({ cost_usd: 0.5 }), []))
    const sender = new TeamSender({ db, url: team.url, token: ALICE, batchSize: 500, maxBackoffMs: 500, log: silentLogger }).start()
    cleanups.push(() => sender.stop())
    const teamCalls = () => {
      const t = new Database(team.dbFile, { readonly: true })
      try {
        return t.prepare("SELECT origin_id, cost_usd FROM calls WHERE member = 'alice' ORDER BY origin_id").all()
      } finally {
        t.close()
      }
    }
    // The 500 calls of 20 KB each (10 MB) are more than the team server takes in one request (8 MB):
    // sent in halves, each of them refused there for its model name (longer than 1,000 characters),
    // and the $0.50 call after them is stored.
    await eventually(() => sender.status().backlog === 0, 20_000)
    expect(teamCalls()).toEqual([{ origin_id: 501, cost_usd: 0.5 }])
    expect(sender.status()).toMatchObject({ sent: 1, rejected: 500 })
    // One call alone larger than that (a 9 MB model name) is skipped as refused; the next one goes.
    insert.run(callValues(makeCall({ model: 'y'.repeat(9_000_000), status: 400, cost_usd: 0, input_tokens: 0, output_tokens: 0 }), []))
    insert.run(callValues(makeCall({ cost_usd: 0.25 }), []))
    sender.wake()
    await eventually(() => sender.status().backlog === 0, 20_000)
    expect(teamCalls()).toEqual([{ origin_id: 501, cost_usd: 0.5 }, { origin_id: 503, cost_usd: 0.25 }])
    expect(sender.status()).toMatchObject({ sent: 2, rejected: 501 })
  })
})
