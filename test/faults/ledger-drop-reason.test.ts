import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import { createLogger } from '../../src/main/log'
import { LedgerLog } from '../../src/main/reliability/ledger-log'
import { makeCall } from '../dashboard/seed'

/**
 * The log line for dropped calls says why they were dropped: more than ledger.max_pending waited,
 * or the database refused the row itself (here a real SQLite trigger refuses it). Both were
 * logged as "more than ledger.max_pending calls waited", which sent people to raise the bound.
 */

let dir: string
let db: Database.Database
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-drop-'))
  db = openDatabase(join(dir, 'burnrate.db'))
})
afterEach(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

function watch(ledger: Ledger): { lines: string[]; check: () => void } {
  const lines: string[] = []
  const log = new LedgerLog(createLogger('info', (l) => lines.push(l)))
  return { lines, check: () => log.check(ledger.status) }
}

describe('the log line for dropped calls', () => {
  it('a row the database refuses: says it could not be written and why, not max_pending', () => {
    db.exec("CREATE TRIGGER refuse_poison BEFORE INSERT ON calls WHEN NEW.session = 'poison' BEGIN SELECT RAISE(ABORT, 'refused by a trigger'); END")
    const ledger = new Ledger(db, { flushIntervalMs: 60_000, maxPending: 1000, timezone: 'UTC' })
    const w = watch(ledger)
    ledger.record(makeCall({ session: 'poison' }))
    ledger.record(makeCall({ session: 'fine' }))
    ledger.flush()
    w.check()
    expect(ledger.status.dropped).toBe(1)
    expect(db.prepare('SELECT session FROM calls').pluck().all()).toEqual(['fine'])
    const errors = w.lines.filter((l) => l.includes('dropped'))
    expect(errors).toHaveLength(1)
    expect(errors[0]).toMatch(/error .*1 call\(s\) were dropped \(1 in all\): the database refused .*refused by a trigger/)
    expect(errors[0]).not.toContain('max_pending')
    ledger.close()
  })

  it('calls past ledger.max_pending: says so', () => {
    const ledger = new Ledger(db, { flushIntervalMs: 60_000, maxPending: 5, timezone: 'UTC' })
    const w = watch(ledger)
    for (let i = 0; i < 8; i++) ledger.record(makeCall({ session: `s${i}` }))
    w.check()
    expect(ledger.status.dropped).toBe(3)
    expect(w.lines.filter((l) => l.includes('dropped'))).toEqual([expect.stringMatching(/error .*3 call\(s\) were dropped: more than ledger.max_pending calls waited for the database \(3 in all\)/)])
    ledger.close()
  })
})
