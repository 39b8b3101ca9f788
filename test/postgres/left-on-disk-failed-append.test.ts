import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { PgLedger } from '../../src/main/ledger/pg/pg-ledger'
import { ledgerGauges } from '../../src/main/metrics/ledger'
import type { ServerContext } from '../../src/main/server/context'
import { spillFiles } from '../../src/main/reliability/spill'
import { makeCall } from '../dashboard/seed'
import { until, usePostgres } from '../support/pg-harness'
import { canMount, fillDisk, mountTmpfs, unmount } from '../support/tmpfs'

// PostgreSQL away, memory full (ledger.max_pending) while the spill journal's append is under way:
// a call that leaves memory then is on disk only if that append succeeds. It was counted in
// burnrate_ledger_left_on_disk_total (calls on disk, not lost) at once, and when the append
// failed (a full disk) it was counted dropped too, while the counter, which never goes down, kept
// it: a scrape meanwhile read it as kept on disk for good. Counted now once the append has put it
// there. Needs root (a real small tmpfs).

const h = usePostgres({ upstream: false })
const metric = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1])
const TOTAL = 'burnrate_ledger_left_on_disk_total'

describe.skipIf(!canMount)('a call that leaves memory while a failing journal append holds it', () => {
  it('is counted dropped, and never in burnrate_ledger_left_on_disk_total', async () => {
    const mount = mountTmpfs(1024)!
    const url = h.database()
    const dir = join(mount, 'data')
    mkdirSync(dir)
    const store = h.store(url)
    const ledger = new PgLedger(store, { flushIntervalMs: 20, maxPending: 10, timezone: 'UTC', dataDir: dir }).start()
    const registry = new Registry()
    ledgerGauges(registry, { ledger, store, config: { team: { members: [] } } } as unknown as ServerContext)
    let stopped = false
    const filler = join(mount, 'filler')
    try {
      ledger.record(makeCall({ session: 'before' }))
      expect(await ledger.flushed()).toBe(true)
      h.pg.stopServer()
      stopped = true
      // Not a byte left: the journal's file is made, its first append fails.
      fillDisk(filler)
      for (let i = 1; i <= 10; i++) ledger.record(makeCall({ session: `c${i}` }))
      await new Promise<void>((resolve) => {
        const look = (): void => {
          if (spillFiles(dir).length > 0) resolve()
          else setImmediate(look)
        }
        look()
      })
      // The append is under way: c1 leaves memory, held by it only.
      ledger.record(makeCall({ session: 'c11' }))
      expect(ledger.status.left_on_disk).toBe(1)
      // A scrape now (its counters are read at once).
      const during = registry.metrics()
      await until('the append failed', () => ledger.status.dropped === 1)
      expect(ledger.status.left_on_disk).toBe(0)
      expect(ledger.status.left_on_disk_total ?? 0).toBe(0)
      expect(metric(await during, TOTAL)).toBe(0)
      const after = await registry.metrics()
      expect(metric(after, TOTAL)).toBe(0)
      expect(metric(after, 'burnrate_ledger_dropped_total')).toBe(1)
    } finally {
      rmSync(filler, { force: true })
      if (stopped) h.pg.startServer()
      await ledger.close()
      unmount(mount)
    }
  }, 60_000)
})
