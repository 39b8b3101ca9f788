import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../../src/main/cli/program'
import { INSERT_CALL_SQL, callValues } from '../../src/main/ledger/columns'
import { makeCall } from '../dashboard/seed'
import { type TestServer, startTestServer } from '../support/server'

/**
 * `burnrate export --local` reads the ledger file beside a server that keeps writing to it: the
 * file it prints holds the calls that were in the ledger when it began. A call committed while it
 * prints, whatever its time (a long stream stamped when it arrived, an import), is in none of it,
 * so a call committed later (B) is never there without one committed before it (A).
 */
let t: TestServer
const now = Date.now()
const N = 20_000

beforeAll(async () => {
  t = await startTestServer({ timezone: 'UTC' })
  const start = now - 20 * 3_600_000
  for (let i = 0; i < N; i++) t.server.ledger.record(makeCall({ ts: start + Math.floor((i * 19 * 3_600_000) / N), cost_usd: 0.001 }))
  await t.server.ledger.flush()
}, 120_000)
afterAll(async () => {
  await t.cleanup()
})

describe('burnrate export --local beside a writer', () => {
  it('holds the calls of the moment it began: not A (older time) nor B committed after its first page', async () => {
    // A writer beside the export, on its own connection to the ledger file (as the server's).
    const writer = new Database(t.dbFile)
    const insert = writer.prepare(INSERT_CALL_SQL)
    let out = ''
    let writes = 0
    const stdout = process.stdout.write
    process.stdout.write = ((s: string) => {
      out += s
      // The header, then the first page (5,000 calls, the window's first hours): A and B commit
      // before the next page is read.
      if (++writes === 2) {
        insert.run(callValues(makeCall({ ts: now - 20 * 3_600_000 + 60_000, cost_usd: 1, session: 'call-A' }), []))
        insert.run(callValues(makeCall({ ts: now - 30 * 60_000, cost_usd: 2, session: 'call-B' }), []))
      }
      return true
    }) as typeof process.stdout.write
    let code: number
    try {
      code = await runCli(['export', '--local', '--data-dir', t.dir, '--config', t.configFile, '--format', 'csv'])
    } finally {
      process.stdout.write = stdout
      writer.close()
    }
    expect(code).toBe(0)
    expect(writes).toBeGreaterThan(2)
    const rows = out.trim().split('\r\n').length - 1
    expect({ A: out.includes(',call-A,'), B: out.includes(',call-B,'), rows }).toEqual({ A: false, B: false, rows: N })
  }, 60_000)
})
