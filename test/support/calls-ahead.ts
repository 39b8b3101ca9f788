import { untilMetersRead, callsFeed } from './calls-feed'
import { type PgHarness, until } from './pg-harness'
import type { TestServer } from './server'

/**
 * The servers of the tests of calls stamped ahead of the clock (test/budgets/*-ahead-*), each
 * holding the calls `record` records (and flushes) as it comes to, with `config`: as recorded, as
 * read at start-up on SQLite, and as recorded, heard and read at start-up on PostgreSQL. Each test
 * then steps the clock over its periods and checks the servers' figures.
 */
export function serversAhead(h: PgHarness, record: (t: TestServer) => Promise<unknown>) {
  return {
    /** One on SQLite that recorded the calls. */
    async recorded(config: Record<string, unknown>): Promise<TestServer[]> {
      const t = await h.server({ url: null, config })
      await record(t)
      return [t]
    },

    /** One on SQLite that read the calls at start-up (one that recorded them, restarted), for `check`; stopped after it. */
    async readAtStart(config: Record<string, unknown>, check: (servers: TestServer[]) => Promise<void>): Promise<void> {
      const first = await h.server({ url: null, config })
      await record(first)
      const t = await first.restart()
      try {
        await check([t])
      } finally {
        await t.stop()
      }
    },

    /**
     * Three on one PostgreSQL database: one that recorded the calls, one that heard them from it
     * (one notification), and one started after them, that read them from PostgreSQL (the ledger's
     * and the meters' reads).
     */
    async shared(config: Record<string, unknown>): Promise<TestServer[]> {
      const url = h.database()
      const [a, b] = [await h.server({ url, config }), await h.server({ url, config })]
      for (const t of [a, b]) await untilMetersRead(t)
      await record(a)
      await until("b heard a's calls (one notification)", () => callsFeed(b).heard >= 1)
      const c = await h.server({ url, config })
      await untilMetersRead(c)
      return [a, b, c]
    },
  }
}
