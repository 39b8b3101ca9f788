import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { type LoadUpstream, loadFixtures, makeKeys, readLedger, runLoad, startBuiltServer, startLoadUpstream } from '../load/harness'

/**
 * SIGKILL under load, against the built server (out/main/cli.js): the database opens cleanly
 * afterwards and holds every call whose response finished more than 100 ms before the kill.
 */

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
    it(`round ${round}: every call finished 100 ms before the kill is on disk, and the database is sound`, async () => {
      const server = await startBuiltServer({}, upstream.url)
      let stop = false
      let killedAt = 0
      const load = runLoad({
        url: server.url,
        fixtures,
        concurrency: 100,
        durationMs: 20_000,
        keys: makeKeys(4, 'kill'),
        stop: () => stop,
        idPrefix: `kill${round}`,
      })
      // Let the load run a while (a different moment each round), then kill without warning.
      await new Promise((r) => setTimeout(r, 1200 + round * 400))
      killedAt = Date.now()
      await server.kill('SIGKILL')
      stop = true
      const result = await load

      const mustHave = result.completed.filter((c) => c.endedAt < killedAt - 100)
      expect(mustHave.length).toBeGreaterThan(100)
      const ledger = readLedger(server.dbFile)
      expect(ledger.integrity).toBe('ok')
      const missing = mustHave.filter((c) => !ledger.sessions.has(c.id))
      expect(missing.map((c) => c.id)).toEqual([])
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
