import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { until, usePostgres } from '../support/pg-harness'
import { PgLedger } from '../../src/main/ledger/pg/pg-ledger'
import { PostgresStore } from '../../src/main/storage/postgres'

const h = usePostgres({ upstream: false })

const call = (session: string) => makeCall({ session })

describe('a batch whose statement and ROLLBACK both outlast the query timeout (a table locked for long)', () => {
  it('does not hand the connection, its INSERT still running, to the next batch: every stored call reaches the batch hooks', async () => {
    const url = h.database()
    // One connection, so the retry gets the one the timed-out batch used; a short query timeout stands in for the minute.
    const store = new PostgresStore(url, { max: 1, queryTimeoutMs: 200 })
    const ledger = new PgLedger(store, { flushIntervalMs: 20, maxPending: 1000, timezone: 'UTC', dataDir: h.tempDir('burnrate-rbt-'), stallMs: 60_000 }).start()
    const hooked: string[] = []
    ledger.onBatchTx(async (_tx, rows) => {
      for (const r of rows) hooked.push(r.session)
    })
    try {
      ledger.record(call('before'))
      expect(await ledger.flushed()).toBe(true)
      let release: () => void = () => {}
      let locked: () => void = () => {}
      const isLocked = new Promise<void>((r) => (locked = r))
      const holder = h.store(url).transaction(async (tx) => {
        await tx.run('LOCK TABLE calls IN EXCLUSIVE MODE')
        locked()
        await new Promise<void>((r) => (release = r))
      })
      await isLocked
      const watch = h.store(url)
      try {
        ledger.record(call('s1'))
        // The INSERT times out, then its ROLLBACK (queued behind it on the same connection) does too.
        await until('the batch timed out', () => /timeout/i.test(ledger.status.last_error ?? ''))
        await new Promise((r) => setTimeout(r, 1500))
        expect((await watch.all("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()")).length).toBeGreaterThan(0)
      } finally {
        release()
      }
      await holder
      expect(await ledger.flushed()).toBe(true)
      const stored = (await watch.all<{ session: string }>('SELECT session FROM calls ORDER BY id')).map((r) => r.session)
      expect(stored).toEqual(['before', 's1'])
      // Every stored call went through the hooks (budget spend rows, dashboard rollups) once.
      expect(hooked).toEqual(['before', 's1'])
    } finally {
      await ledger.close()
      await store.close()
    }
  })
})
