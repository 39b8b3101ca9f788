import { describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/** A server whose config a feature refuses after the PostgreSQL ledger started lets go of the database. */

const h = usePostgres({ upstream: false })

describe('a refused start-up with storage.url', () => {
  it('stops the PostgreSQL ledger it had started: no connection is left open', async () => {
    const url = h.database()
    // The team sender reads this machine's SQLite ledger: with storage.url it is refused at start-up.
    await expect(h.server({ url, config: { team: { url: 'http://127.0.0.1:9/', token: 'a-long-enough-team-token-0123456789' } } })).rejects.toThrow(/team/)
    const admin = h.store(h.pg.url)
    await eventually(async () => {
      const row = await admin.get<{ n: number }>(
        "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'burnrate' AND datname = @db",
        { db: new URL(url).pathname.slice(1) },
      )
      if (row?.n !== 0) throw new Error(`${row?.n} connections still open`)
      return true
    })
  })
})
