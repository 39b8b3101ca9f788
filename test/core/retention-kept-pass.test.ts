import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { DB_FILE } from '../../src/main/config/paths'
import { RollupWriter } from '../../src/main/dashboard/rollup/writer'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import { PRUNE_BATCH, PRUNE_SCAN, retentionCutoff } from '../../src/main/ledger/retention'
import { makeCall } from '../dashboard/seed'

const DAY = 86_400_000
const MINUTE = 60_000

const cleanups: (() => void)[] = []
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c()
})

/**
 * Old calls that retention keeps (a session still in use; alike a member's unacknowledged
 * backlog) more than one step can look at: each pass over them ends, so the pruner goes back to
 * its idle delay instead of a step every 100 ms, each reading 5,000 calls under the write lock,
 * for as long as they are kept.
 */
describe('retention over more kept old calls than a step looks at', () => {
  it('ends its pass once it has looked at every old call, pass after pass', () => {
    const now = Date.now()
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-retention-kept-'))
    const db = openDatabase(join(dir, DB_FILE))
    const ledger = new Ledger(db, { flushIntervalMs: 50, maxPending: 1_000_000, timezone: 'UTC' })
    cleanups.push(() => {
      ledger.close()
      db.close()
      rmSync(dir, { recursive: true, force: true })
    })
    const writer = new RollupWriter(db)
    ledger.onBatch((b) => writer.onBatch(b))
    const kept = 2 * PRUNE_SCAN + 300
    const first = now - 300 * DAY
    for (let i = 0; i < kept; i++) ledger.record(makeCall({ ts: first + i * MINUTE, session: 'live' }))
    ledger.record(makeCall({ ts: now, session: 'live' }))
    ledger.flush()
    const cutoff = retentionCutoff(32, now)
    // Each pass needs ceil(kept / PRUNE_SCAN) steps, one more at most for where the last one stopped.
    const bound = Math.ceil(kept / PRUNE_SCAN) + 1
    for (let pass = 0; pass < 3; pass++) {
      let steps = 0
      do {
        steps++
        ledger.prune(cutoff, PRUNE_BATCH)
      } while (ledger.pruneUnfinished && steps <= bound)
      expect({ pass, unfinished: ledger.pruneUnfinished }).toEqual({ pass, unfinished: false })
      expect(steps).toBeLessThanOrEqual(bound)
    }
    expect(db.prepare('SELECT count(*) FROM calls').pluck().get()).toBe(kept + 1)
  })
})
