import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { callRecord } from '../../src/main/desktop-logic/test-helpers'
import { createLogger } from '../../src/main/log'
import type { PgStorageStatus } from '../../src/main/ledger/pg/options'
import { PendingQueue } from '../../src/main/ledger/pg/queue'
import { Spill } from '../../src/main/ledger/pg/spill'
import type { LedgerStatus } from '../../src/main/ledger/types'
import { spillFiles } from '../../src/main/reliability/spill'

// Two stops on PostgreSQL can overlap: a second signal's exit (PgLedger.keepQueued) while the
// first stop's close keeps what its last write did not store (PgLedger.close), each ending in
// Spill.keepRest. Both read the queue before either append had ended and wrote at the same
// offset of the journal: when the write under way had meanwhile stored a batch (the queue
// shorter), the second wrote its shorter run of lines over the start of the first's, tearing a
// line and leaving some calls twice and one torn; and the calls were counted kept twice (the log
// said so). The real queue, spill and journal on a real data folder; the batch PostgreSQL
// commits in between is the queue's own removal, as the ledger's writer does it.

describe("the PostgreSQL ledger's spill at two overlapping stops", () => {
  it('keeps the queue once, every line whole, and counts each call once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keep-rest-overlap-'))
    try {
      const status: LedgerStatus = { writable: true, pending: 0, dropped: 0, last_error: null }
      const storage: PgStorageStatus = { reachable: false, ready: false, spilled: 0, spill_files: 0, last_error: null }
      const queue = new PendingQueue(status)
      const lines: string[] = []
      const spill = new Spill(queue, status, storage, {
        dataDir: dir,
        log: createLogger('info', (l) => lines.push(l)),
        secret: undefined,
        batchRows: 100,
        writeRows: async () => {},
        away: () => false,
        closed: () => true,
      })
      // Session names of different lengths: a line written over another's does not line up with it.
      for (let i = 0; i < 300; i++) queue.add(callRecord({ ts: 1_000 + i, session: `s-${i}-${'x'.repeat(i % 37)}` }))
      const exiting = spill.keepRest('exiting before they were written to PostgreSQL')
      // The exit has read the queue; its append is under way when the write under way commits a batch...
      for (let i = 0; i < 5; i++) await Promise.resolve()
      queue.removeThrough(100)
      // ...and the first stop, its wait over, keeps what is left.
      const stopping = spill.keepRest()
      await Promise.all([exiting, stopping])

      const files = spillFiles(dir)
      const text = files.map((f) => readFileSync(f, 'utf8')).join('')
      const parsed = text
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => {
          try {
            return JSON.parse(l) as { ts: number }
          } catch {
            return null
          }
        })
      expect(parsed.filter((r) => r === null)).toHaveLength(0)
      const ts = parsed.map((r) => r!.ts)
      expect(new Set(ts).size).toBe(ts.length)
      // Every call not stored by the batch is in a file, once; the calls counted kept are those in the files.
      for (let i = 100; i < 300; i++) expect(ts).toContain(1_000 + i)
      expect(storage.spilled).toBe(ts.length)
      expect(status.dropped).toBe(0)
      // Said once, with the number kept.
      expect(lines.filter((l) => l.includes('kept in'))).toHaveLength(1)
      expect(lines.find((l) => l.includes('kept in'))).toContain(`; ${ts.length} call(s) kept in`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
