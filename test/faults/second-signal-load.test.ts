import { readFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { type CallResult, type LoadUpstream, loadFixtures, makeKeys, runLoad, startBuiltServer, startLoadUpstream } from '../load/harness'

// The built headless server stopped by two SIGTERMs under load (the second: exit without waiting):
// every call that reached the upstream is in the ledger exactly once (those under way cut, 503 burnrate_stopped),
// and the database is sound. Before, the streams under way at the second signal were lost.

const fixtures = loadFixtures()
let upstream: LoadUpstream
beforeAll(async () => {
  upstream = await startLoadUpstream(fixtures, 20)
})
afterAll(async () => {
  await upstream.close()
})

describe('two SIGTERMs under load', () => {
  it('every call the upstream had is recorded once, and the database is sound', async () => {
    const server = await startBuiltServer({ timezone: 'UTC' }, upstream.url)
    try {
      let stop = false
      const answered: CallResult[] = []
      const load = runLoad({ url: server.url, fixtures, concurrency: 60, durationMs: 20_000, keys: makeKeys(4, 'twice'), stop: () => stop, idPrefix: 'twice', onCall: (c) => c.ok && answered.push(c) })
      await eventually(() => answered.length > 200 || undefined, 30_000)
      server.child.kill('SIGTERM')
      await eventually(() => readFileSync(server.logFile, 'utf8').includes('SIGTERM: finishing calls under way'))
      expect(await server.stop()).toBe(1)
      stop = true
      await load
      const db = new Database(server.dbFile)
      const integrity = db.pragma('integrity_check', { simple: true })
      const sessions = db.prepare("SELECT session FROM calls WHERE session LIKE 'twice-%'").pluck().all() as string[]
      // The load's client never hangs up: a call cut by the stop is Burnrate's doing, never 499 client_aborted.
      const blamed = db.prepare("SELECT count(*) FROM calls WHERE session LIKE 'twice-%' AND (status = 499 OR error = 'client_aborted')").pluck().get()
      db.close()
      expect(integrity).toBe('ok')
      expect(blamed).toBe(0)
      const reached = [...upstream.timings.keys()].filter((id) => id.startsWith('twice-')).sort()
      expect(reached.length).toBeGreaterThan(200)
      expect([...sessions].sort()).toEqual(reached)
    } finally {
      await server.dispose()
    }
  }, 60_000)
})
