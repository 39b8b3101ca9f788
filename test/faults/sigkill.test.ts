import { existsSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, request } from '../support/http'
import { type CallResult, type LoadUpstream, loadFixtures, makeKeys, readLedger, runLoad, startBuiltServer, startLoadUpstream } from '../load/harness'

/**
 * SIGKILL under load, against the built server (out/main/cli.js): the database opens cleanly
 * afterwards and holds every call the ledger had committed before the kill (README: Resilience).
 * Which calls those are is observed, not assumed from a time margin: the calls answered at some
 * moment are all in the file once a call sent after that moment is (the ledger writes calls in
 * the order they were recorded, each as its answer ends), so the kill comes right after that,
 * still under load. How many ms before a kill a call is safe on a machine not starved of CPU is
 * measured by the chaos run (README: Resilience, `sigkill` row), not asserted here.
 */

/** The ids among `ids` that a running server's ledger file holds (read-only, beside its writer). */
function onDisk(dbFile: string, ids: readonly string[]): Set<string> {
  if (ids.length === 0 || !existsSync(dbFile)) return new Set()
  const db = new Database(dbFile, { readonly: true, fileMustExist: true })
  try {
    const rows = db.prepare(`SELECT session FROM calls WHERE session IN (${ids.map(() => '?').join(',')})`).all(...ids) as { session: string }[]
    return new Set(rows.map((r) => r.session))
  } finally {
    db.close()
  }
}

const fixtures = loadFixtures()
let upstream: LoadUpstream

beforeAll(async () => {
  upstream = await startLoadUpstream(fixtures, 5)
})
afterAll(async () => {
  await upstream.close()
})

describe('SIGKILL under load', () => {
  for (const round of [1, 2, 3]) {
    it(`round ${round}: every call committed before the kill is on disk after it, and the database is sound`, async () => {
      const server = await startBuiltServer({}, upstream.url)
      let stop = false
      const answered: CallResult[] = []
      const load = runLoad({
        url: server.url,
        fixtures,
        concurrency: 100,
        durationMs: 20_000,
        keys: makeKeys(4, 'kill'),
        stop: () => stop,
        idPrefix: `kill${round}`,
        onCall: (c) => {
          if (c.ok) answered.push(c)
        },
      })
      // Let the load run a while (a different moment each round): every call answered by then...
      await new Promise((r) => setTimeout(r, 1200 + round * 400))
      // ...and at least a hundred of them, however slow a busy machine makes the first seconds.
      await eventually(() => {
        if (answered.length <= 100) throw new Error(`only ${answered.length} calls answered yet`)
        return true
      }, 30_000)
      const cut = performance.now()
      const settled = answered.map((c) => c.id)
      // ...is in the file once a call sent after that moment is; then kill without warning.
      await eventually(() => {
        const later = answered.filter((c) => c.sent > cut).map((c) => c.id)
        if (onDisk(server.dbFile, later).size === 0) throw new Error('no call sent after the cut on disk yet')
        return true
      }, 30_000)
      await server.kill('SIGKILL')
      stop = true
      const result = await load

      expect(settled.length).toBeGreaterThan(100)
      const ledger = readLedger(server.dbFile)
      expect(ledger.integrity).toBe('ok')
      expect(settled.filter((id) => !ledger.sessions.has(id))).toEqual([])
      // Nothing recorded that was never sent.
      const started = new Set(result.calls.map((c) => c.id))
      expect([...ledger.sessions].filter((s) => !started.has(s))).toEqual([])

      // And it starts again on the same data, with everything it had.
      const again = await startBuiltServer({}, upstream.url, server.dataDir)
      try {
        const h = await request(`${again.url}/api/health`)
        expect(h.json().status).toBe('ok')
        expect(readLedger(again.dbFile).count).toBe(ledger.count)
      } finally {
        await again.stop()
        await again.dispose()
      }
    }, 60_000)
  }
})
