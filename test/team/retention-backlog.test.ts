import { mkdtempSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { INSERT_CALL_SQL, callValues } from '../../src/main/ledger/columns'
import { openDatabase } from '../../src/main/ledger/db'
import { makeCall } from '../dashboard/seed'
import { eventually, request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A member with `ledger.retention_days` whose team server is away (the VPN not up, a refused
 * token) while its backlog is older than the retention: retention must not prune what the team
 * server has not acknowledged, or the team's totals silently lose it. What it has acknowledged
 * is pruned as before.
 */
const ALICE = 'team-token-alice-retention-77a1'
const DAY = 86_400_000

/** A port nothing listens on (for now). */
async function freePort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()))
  const port = (s.address() as { port: number }).port
  await new Promise((r) => s.close(r))
  return port
}

const ids = (file: string): number[] => {
  const db = new Database(file, { readonly: true })
  try {
    return db.prepare('SELECT id FROM calls ORDER BY id').pluck().all() as number[]
  } finally {
    db.close()
  }
}

describe('a member whose unsent backlog is older than its retention', () => {
  const servers: TestServer[] = []
  afterAll(async () => {
    for (const s of servers.reverse()) await s.cleanup()
  })

  it('keeps it until the team server has it, and sends it whole', async () => {
    const port = await freePort()
    const teamUrl = `http://127.0.0.1:${port}`
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-team-retention-'))
    const db = openDatabase(join(dir, 'burnrate.db'))
    const insert = db.prepare(INSERT_CALL_SQL)
    // Five calls 40 days old ($1 to $5), one today ($0.50); the team server acknowledged the first two.
    for (let i = 0; i < 5; i++) insert.run(callValues(makeCall({ ts: Date.now() - 40 * DAY + i, cost_usd: 1 + i, session: '' }), []))
    insert.run(callValues(makeCall({ ts: Date.now() - 1000, cost_usd: 0.5, session: '' }), []))
    db.prepare('INSERT INTO team_cursor (url, last_id, updated_at, revision, revision_id) VALUES (?, 2, ?, 0, 0)').run(teamUrl, Date.now())
    db.close()

    const alice = await startTestServer({ timezone: 'UTC', ledger: { retention_days: 32 }, team: { url: teamUrl, token: ALICE, max_backoff_ms: 1000 } }, undefined, dir)
    servers.push(alice)
    // Retention's first step prunes the two calls the team server has; the three it has not stay.
    await eventually(() => expect(ids(alice.dbFile)).toEqual([3, 4, 5, 6]), 30_000)
    expect((await request(`${alice.url}/api/health`)).json().team.backlog).toBe(4)

    // The team server comes up at its address: it gets the whole backlog.
    const team = await startTestServer({ timezone: 'UTC', server: { port }, team: { members: [{ name: 'alice', token: ALICE }] } })
    servers.push(team)
    await eventually(async () => expect((await request(`${alice.url}/api/health`)).json().team.backlog).toBe(0), 30_000)
    const t = new Database(team.dbFile, { readonly: true })
    const got = t.prepare('SELECT count(*) AS n, total(cost_usd) AS usd FROM calls').get()
    t.close()
    expect(got).toEqual({ n: 4, usd: 3 + 4 + 5 + 0.5 })
    // Sent, the old ones are pruned at the next step (the newest call is always kept).
    await alice.server.ledger.prune(Date.now() - 32 * DAY, 1000, teamUrl)
    expect(ids(alice.dbFile)).toEqual([6])
  }, 90_000)
})
