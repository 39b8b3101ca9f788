import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import type { SideWrite } from '../../src/main/ledger/side-writes'
import { createLogger } from '../../src/main/log'
import { keepPending } from '../../src/main/reliability/spill'
import { makeCall } from '../dashboard/seed'
import { canMount, fillDisk, mountTmpfs, unmount } from '../support/tmpfs'

/**
 * A stop whose spill file could take nothing (a full disk: the write fails at its first byte)
 * while a background job's budget hold waited to be written with the calls. The hold was lost,
 * and the log did not say so: it named the calls that could not be saved, or, with no call
 * waiting, said nothing at all, so nobody knew a second job could get past the block rule after
 * the restart. Needs root (a real small tmpfs), as test/faults/spill-full-disk.test.ts.
 */

const HOLD: SideWrite = {
  hold: { provider: 'openai', responseId: 'resp_cut_hold', keyHash: 'h1', ts: 1, session: 's', rule: 'r', amount: 5, until: Date.now() + 3_600_000 },
}

/** keepPending on a ledger holding `calls` calls and the hold, its spill file on a full disk; the log's lines. */
function stopOnFullDisk(calls: number): string[] {
  const home = mkdtempSync(join(tmpdir(), 'burnrate-side-cut-'))
  const mount = mountTmpfs(256)!
  const db = openDatabase(join(home, 'burnrate.db'))
  try {
    const dir = join(mount, 'data')
    mkdirSync(dir)
    fillDisk(join(mount, 'filler'))
    const lines: string[] = []
    const ledger = new Ledger(db, { flushIntervalMs: 60_000, maxPending: 1000, timezone: 'UTC' })
    for (let i = 0; i < calls; i++) ledger.record(makeCall({ session: `c${i}` }))
    ledger.keepWithNextBatch([HOLD])
    keepPending(ledger, dir, createLogger('info', (l) => lines.push(l)), { flushFirst: false })
    return lines
  } finally {
    db.close()
    unmount(mount)
    rmSync(home, { recursive: true, force: true })
  }
}

describe.skipIf(!canMount)("a stop's spill file that takes nothing (a full disk), a budget hold waiting", () => {
  it('with calls waiting too: the log says the hold could not be saved, with the calls', () => {
    const lines = stopOnFullDisk(2)
    expect(lines.filter((l) => l.includes('could not be saved anywhere'))).toEqual([
      expect.stringMatching(/error .*2 call\(s\) and 1 other row\(s\) \(budget holds, key patterns\) could not be saved anywhere: ENOSPC/),
    ])
  })

  it('with no call waiting: the log still says the hold could not be saved', () => {
    const lines = stopOnFullDisk(0)
    expect(lines.filter((l) => l.includes('could not be saved anywhere'))).toEqual([
      expect.stringMatching(/error .*0 call\(s\) and 1 other row\(s\) \(budget holds, key patterns\) could not be saved anywhere: ENOSPC/),
    ])
  })
})
