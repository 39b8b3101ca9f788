import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import { createLogger } from '../../src/main/log'
import { LedgerLog } from '../../src/main/reliability/ledger-log'
import { makeCall } from '../dashboard/seed'

/**
 * A batch refused for one of its rows is written row by row; when the database itself then fails
 * (full, locked), the writes stop and the rest waits: `last_error` (/api/health, and the log's
 * "the database cannot be written (…)", said once) names that failure. Builds before this one left
 * the refused row's "a call could not be written and was dropped" there, or nothing ("unknown
 * error"), until the next attempt. The disk fills up here at one row: a real SQLite trigger calls
 * a function that fails as SQLite does on a full disk.
 */

let dir: string
let db: Database.Database
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-onebyone-'))
  db = openDatabase(join(dir, 'burnrate.db'))
  db.function('disk_full', () => {
    throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' })
  })
  db.exec("CREATE TRIGGER refuse_poison BEFORE INSERT ON calls WHEN NEW.session = 'poison' BEGIN SELECT RAISE(ABORT, 'refused by a trigger'); END")
  db.exec("CREATE TRIGGER disk_fills BEFORE INSERT ON calls WHEN NEW.session = 'full' BEGIN SELECT disk_full(); END")
})
afterEach(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

it.each([
  ['a row dropped before it', ['poison', 'full']],
  ['a row refused once, then written cleaned, before it', ['full']],
])('the database failing part-way through a batch written row by row (%s): last_error and the log name that failure', (_, sessions) => {
  const lines: string[] = []
  const watch = new LedgerLog(createLogger('info', (l) => lines.push(l)))
  const ledger = new Ledger(db, { flushIntervalMs: 60_000, maxPending: 1000, timezone: 'UTC' })
  // A NaN token count: the batch is refused for it, and the row written once cleaned (reliability/rows.ts).
  if (sessions.length === 1) ledger.record(makeCall({ session: 'odd', input_tokens: Number.NaN }))
  for (const session of sessions) ledger.record(makeCall({ session }))
  expect(ledger.flush()).toBe(false)
  watch.check(ledger.status)
  expect(ledger.status.writable).toBe(false)
  expect(ledger.status.last_error).toMatch(/SQLITE_FULL: database or disk is full/)
  expect(lines.filter((l) => l.includes('cannot be written'))).toEqual([expect.stringMatching(/the database cannot be written \(SQLITE_FULL: database or disk is full\)/)])
  ledger.close()
})
