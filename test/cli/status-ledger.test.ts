import http from 'node:http'
import type { AddressInfo } from 'node:net'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { lockFromAnotherProcess } from '../load/harness'
import { makeCall } from '../dashboard/seed'
import { runCliCaptured } from '../support/cli'
import { eventually } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * `burnrate status`'s ledger line against a running server whose database cannot be written: it
 * said NOT WRITABLE without why (the health's `last_error`: another process holds the file) and one
 * count of dropped calls, though the health tells those past `ledger.max_pending` (`overflowed`,
 * which a bigger bound would have kept) from the others (a row the database refused). And what
 * it asks the server, each once: its /api/health too, read to find the server and asked again for
 * the ledger line by builds before this one.
 */

let t: TestServer
let front: http.Server
let frontUrl = ''
/** The paths the CLI asked for, in order (through a forwarder in front of the server). */
const asked: string[] = []

beforeAll(async () => {
  t = await startTestServer({ ledger: { max_pending: 5 } })
  front = http.createServer((req, res) => {
    asked.push(req.url!.split('?')[0])
    void fetch(t.url + req.url, { headers: { ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}) } }).then(
      async (r) => {
        const body = Buffer.from(await r.arrayBuffer())
        res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' })
        res.end(body)
      },
      () => res.destroy(),
    )
  })
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r))
  frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}`
})
afterAll(async () => {
  await new Promise<void>((r) => front.close(() => r()))
  await t.cleanup()
})

describe('burnrate status: the ledger line', () => {
  it('says why the database cannot be written, and how many calls were dropped past ledger.max_pending and how many otherwise', async () => {
    // A real SQLite trigger refuses one session's rows: one call dropped, not past the bound.
    const db = new Database(t.dbFile)
    db.exec("CREATE TRIGGER refuse_poison BEFORE INSERT ON calls WHEN NEW.session = 'poison' BEGIN SELECT RAISE(ABORT, 'refused by a trigger'); END")
    db.close()
    t.server.ledger.record(makeCall({ session: 'poison' }))
    await t.server.ledger.flushed()
    await eventually(() => t.server.ledger.status.dropped === 1 || undefined)
    // Another process holds the file; more calls than ledger.max_pending come at once (none on disk yet).
    const lock = await lockFromAnotherProcess(t.dbFile)
    try {
      for (let i = 0; i < 8; i++) t.server.ledger.record(makeCall({ session: `burst-${i}` }))
      await eventually(() => (!t.server.ledger.status.writable && t.server.ledger.status.last_error ? true : undefined))
      const s = t.server.ledger.status
      const overflowed = s.overflowed ?? 0
      expect(overflowed).toBeGreaterThan(0)
      expect(s.dropped).toBe(overflowed + 1)

      asked.length = 0
      const r = await runCliCaptured('status', '--url', frontUrl, '--config', t.configFile, '--data-dir', t.dir)
      expect(r.code, r.out).toBe(0)
      const line = r.out.split('\n').find((l) => l.startsWith('Ledger'))!
      expect(line, r.out).toContain(`NOT WRITABLE (${s.last_error})`)
      expect(line, r.out).toContain(`${s.dropped} dropped (${overflowed} past ledger.max_pending, 1 otherwise: the log says why)`)
      // Each answer it needs, asked once.
      expect(asked.filter((p) => p === '/api/dashboard/plans'), asked.join(' ')).toHaveLength(1)
      expect(asked.filter((p) => p === '/api/dashboard/summary')).toHaveLength(1)
      expect(asked.filter((p) => p === '/api/dashboard/budgets')).toHaveLength(1)
      // The health too: finding the server reads it, and the ledger line is that answer (it was asked again).
      expect(asked.filter((p) => p === '/api/health'), asked.join(' ')).toHaveLength(1)

      // The JSON keeps what it had, the health's reason and split included.
      const j = await runCliCaptured('status', '--json', '--url', frontUrl, '--config', t.configFile, '--data-dir', t.dir)
      expect(j.code, j.out).toBe(0)
      expect(JSON.parse(j.out).ledger).toMatchObject({ writable: false, dropped: s.dropped, overflowed, last_error: s.last_error })
    } finally {
      await lock.release()
    }
  }, 60_000)
})
