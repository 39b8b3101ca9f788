import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { startTestServer } from '../support/server'

/**
 * /api/health tells the calls dropped past `ledger.max_pending` (`ledger.overflowed`) from those
 * the database refused, as the log does: the dashboard's banner said every dropped call was one
 * past ledger.max_pending, sending people to raise a bound that had nothing to do with it.
 */

let upstream: MockUpstream
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
})
afterAll(() => upstream.close())

describe('/api/health: why calls were dropped', () => {
  it('a row the database refuses: counted in dropped, not in overflowed (past ledger.max_pending)', async () => {
    const t = await startTestServer({ ledger: { max_pending: 1000 } }, upstream.url)
    try {
      // A real SQLite trigger refuses one session's rows (from another connection, as a DBA would).
      const db = new Database(t.dbFile)
      db.exec("CREATE TRIGGER refuse_poison BEFORE INSERT ON calls WHEN NEW.session = 'poison' BEGIN SELECT RAISE(ABORT, 'refused by a trigger'); END")
      db.close()
      for (const session of ['poison', 'fine']) {
        const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: 'Bearer sk-drop-reason-0000001', 'x-burnrate-session': session })
        expect(r.status).toBe(200)
      }
      const health = await eventually(async () => {
        const h = (await request(`${t.url}/api/health`)).json()
        if (h.ledger.dropped !== 1 || h.ledger.pending !== 0) throw new Error(`not yet: ${JSON.stringify(h.ledger)}`)
        return h
      })
      expect(health.ledger).toMatchObject({ writable: true, dropped: 1, overflowed: 0 })
    } finally {
      await t.cleanup()
    }
  })
})
