import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { until, usePostgres } from '../support/pg-harness'
import { PgLedger } from '../../src/main/ledger/pg/pg-ledger'
import { spillFiles } from '../../src/main/reliability/spill'

const h = usePostgres({ upstream: false })

const call = (session: string) => makeCall({ session })

describe('memory full while the spill journal is being appended (PostgreSQL away)', () => {
  it('keeps a call that left memory while its append was under way: it is on disk, written when PostgreSQL is back, not dropped', async () => {
    const url = h.database()
    const dir = h.tempDir('burnrate-sifd-')
    const ledger = new PgLedger(h.store(url), { flushIntervalMs: 20, maxPending: 10, timezone: 'UTC', dataDir: dir }).start()
    let stopped = false
    try {
      ledger.record(call('before'))
      expect(await ledger.flushed()).toBe(true)
      h.pg.stopServer()
      stopped = true
      for (let i = 1; i <= 10; i++) ledger.record(call(`c${i}`))
      // The first append opens the journal; its write is under way (its answer comes in a later
      // turn of the event loop) when the next call comes and memory is full: c1 leaves memory.
      await new Promise<void>((resolve) => {
        const look = (): void => {
          if (spillFiles(dir).length > 0) resolve()
          else setImmediate(look)
        }
        look()
      })
      ledger.record(call('c11'))
      await until('all on disk', () => ledger.storage.spilled === 11)
      // Counted as what it is: left memory, on disk, not stored yet.
      expect(ledger.status.left_on_disk).toBe(1)
      h.pg.startServer()
      stopped = false
      expect(await ledger.flushed()).toBe(true)
      await until('the spill written and removed', () => {
        ledger.flush()
        return spillFiles(dir).length === 0
      })
      const sessions = (await h.store(url).all<{ session: string }>('SELECT session FROM calls ORDER BY session')).map((r) => r.session)
      expect(sessions).toEqual(['before', ...Array.from({ length: 11 }, (_, i) => `c${i + 1}`)].sort())
      expect(ledger.status.dropped).toBe(0)
      // Stored now: no longer waiting on disk (/api/health's left_on_disk, the dashboard's banner
      // went on saying it was until a restart), and counted in the total (the metrics' counter).
      expect(ledger.status.left_on_disk).toBe(0)
      expect(ledger.status.left_on_disk_total).toBe(1)
    } finally {
      if (stopped) h.pg.startServer()
      await ledger.close()
    }
  })
})
