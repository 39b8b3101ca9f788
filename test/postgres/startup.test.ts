import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PostgresStore } from '../../src/main/storage/postgres'
import { eventually } from '../support/http'
import { startPostgres, type TestPostgres } from '../support/postgres'
import { startTestServer } from '../support/server'

/** A server whose config a feature refuses after the PostgreSQL ledger started lets go of the database. */

let pg: TestPostgres
beforeAll(async () => {
  pg = await startPostgres()
})
afterAll(() => pg?.stop())

describe('a refused start-up with storage.url', () => {
  it('stops the PostgreSQL ledger it had started: no connection is left open', async () => {
    const url = pg.createDatabase()
    // The team sender reads this machine's SQLite ledger: with storage.url it is refused at start-up.
    await expect(startTestServer({ storage: { url }, team: { url: 'http://127.0.0.1:9/', token: 'a-long-enough-team-token-0123456789' } })).rejects.toThrow(/team/)
    const admin = new PostgresStore(pg.url)
    try {
      await eventually(async () => {
        const row = await admin.get<{ n: number }>(
          "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'burnrate' AND datname = @db",
          { db: new URL(url).pathname.slice(1) },
        )
        if (row?.n !== 0) throw new Error(`${row?.n} connections still open`)
        return true
      })
    } finally {
      await admin.close()
    }
  })
})
