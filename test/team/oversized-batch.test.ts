import { mkdtempSync, rmSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
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
 * A batch whose body is larger than the team server takes (413, 8 MB) must not stop the sender for
 * good: every call recorded after it would never reach the team server. The sender sends each
 * text as the team server stores it (names cut to 200 characters, endpoint and error to 1,000), so
 * a batch that large takes calls whose text JSON writes 6 bytes a character (control characters,
 * `\u0001`), here 500 of about 19 KB each.
 */
const ODD = '\u0001'

describe('a batch larger than the team server takes', () => {
  const cleanups: (() => unknown)[] = []
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c()
  })

  it('is sent in smaller batches, and the calls after it reach the team server', async () => {
    const team: TestServer = await startTestServer({ timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }] } })
    cleanups.push(() => team.cleanup())
    // The way to the team server: a proxy in front of it that takes bodies up to `limit` bytes (413 beyond).
    let limit = Infinity
    const statuses: number[] = []
    const relay = http.createServer(async (req, res) => {
      const parts: Buffer[] = []
      for await (const c of req) parts.push(c as Buffer)
      const body = Buffer.concat(parts)
      if (body.length > limit) {
        statuses.push(413)
        res.writeHead(413, { 'content-type': 'text/html' }).end('<html>413 Request Entity Too Large</html>')
        return
      }
      const r = await fetch(team.url + req.url, { method: req.method, headers: req.headers as Record<string, string>, body })
      statuses.push(r.status)
      res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' }).end(Buffer.from(await r.arrayBuffer()))
    })
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r))
    cleanups.push(() => new Promise((r) => relay.close(r)))
    const url = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-oversized-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const db = openDatabase(join(dir, 'burnrate.db'))
    cleanups.push(() => db.close())
    const insert = db.prepare(INSERT_CALL_SQL)
    const odd = (n: number) => ODD.repeat(n)
    const big = { model: odd(20_000), tenant: odd(300), agent: odd(300), session: odd(300), project: odd(300), response_id: odd(300), endpoint: odd(5000), error: odd(5000) }
    for (let i = 0; i < 500; i++) insert.run(callValues(makeCall({ ...big, status: 404, cost_usd: 0.001 }), []))
    insert.run(callValues(makeCall({ cost_usd: 0.5 }), []))
    const sender = new TeamSender({ db, url, token: ALICE, batchSize: 500, maxBackoffMs: 500, log: silentLogger }).start()
    cleanups.push(() => sender.stop())
    const teamCalls = () => {
      const t = new Database(team.dbFile, { readonly: true })
      try {
        return t.prepare("SELECT origin_id, cost_usd, length(model) AS model, length(error) AS error FROM calls WHERE member = 'alice' ORDER BY origin_id").all() as {
          origin_id: number
          cost_usd: number
          model: number
          error: number | null
        }[]
      } finally {
        t.close()
      }
    }
    // The 500 calls (about 9.7 MB) are more than the team server takes in one request (8 MB): sent
    // in halves, each stored (their text cut as the team server stores it), and the $0.50 call after them.
    await eventually(() => sender.status().backlog === 0, 20_000)
    const stored = teamCalls()
    expect(stored.map((c) => c.origin_id)).toEqual(Array.from({ length: 501 }, (_, i) => i + 1))
    expect(stored.slice(0, 500).every((c) => c.cost_usd === 0.001 && c.model === 200 && c.error === 1000)).toBe(true)
    expect(stored[500]).toMatchObject({ cost_usd: 0.5 })
    expect(sender.status()).toMatchObject({ sent: 501, rejected: 0 })
    expect(statuses.slice(0, 3)).toEqual([413, 200, 200])
    // A 9 MB model name is sent cut, and stored with its money.
    insert.run(callValues(makeCall({ model: 'y'.repeat(9_000_000), cost_usd: 0.125 }), []))
    sender.wake()
    await eventually(() => sender.status().backlog === 0, 20_000)
    expect(teamCalls()[501]).toMatchObject({ origin_id: 502, cost_usd: 0.125, model: 200 })
    // One call alone larger than the way to the team server takes (a proxy's limit of 16 KB) is
    // skipped as refused; the next one goes.
    limit = 16_000
    insert.run(callValues(makeCall({ ...big, status: 400, cost_usd: 0, input_tokens: 0, output_tokens: 0 }), []))
    insert.run(callValues(makeCall({ cost_usd: 0.25 }), []))
    sender.wake()
    await eventually(() => sender.status().backlog === 0, 20_000)
    expect(teamCalls().slice(502).map((c) => [c.origin_id, c.cost_usd])).toEqual([[504, 0.25]])
    expect(sender.status()).toMatchObject({ sent: 503, rejected: 1 })
    expect(statuses.slice(-3)).toEqual([413, 413, 200])
  })
})
