import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { eventually } from '../../../test/support/http'
import { openDatabase } from '../ledger/db'
import { Ledger } from '../ledger/ledger'
import { BackgroundHolds, HoldFile, type HoldInfo } from './background-holds'

const open: { close(): void }[] = []
afterEach(() => {
  for (const c of open.splice(0)) c.close()
})

function setUp() {
  const file = join(mkdtempSync(join(tmpdir(), 'burnrate-holds-')), 'burnrate.db')
  const db = openDatabase(file)
  const ledger = new Ledger(db, { flushIntervalMs: 10, maxPending: 100, timezone: 'UTC' })
  // Another connection holding the write lock, as the ledger's write thread does mid-batch.
  const other = new Database(file)
  open.push({ close: () => (ledger.close(), other.close(), db.close()) })
  return { db, ledger, other }
}

const hold = (responseId: string): HoldInfo => ({
  provider: 'openai', responseId, keyHash: 'h1', ts: 1, session: 's', rule: 'r', amount: 0.5, until: Date.now() + 60_000,
})

describe('HoldFile', () => {
  it('keeps a hold started while the file is locked by another writer: written with the next batch, not lost', () => {
    const { db, ledger, other } = setUp()
    const holds = new BackgroundHolds()
    holds.file = new HoldFile(db, ledger)
    other.exec('BEGIN IMMEDIATE')
    holds.keep(hold('resp_a'), () => {})
    holds.keep(hold('resp_b'), () => {})
    expect(ledger.flush()).toBe(false) // the lock is still held: kept, to be tried again
    other.exec('COMMIT')
    expect(ledger.flush()).toBe(true)
    expect(new HoldFile(db).all().map((h) => h.responseId).sort()).toEqual(['resp_a', 'resp_b'])
    expect(new HoldFile(db).all()[0]).toMatchObject({ keyHash: 'h1', session: 's', rule: 'r', amount: 0.5 })

    // Let go while locked again: the row goes with the next batch, in order after its save.
    other.exec('BEGIN IMMEDIATE')
    holds.release('openai', 'resp_a')
    holds.keep(hold('resp_c'), () => {})
    holds.release('openai', 'resp_c')
    other.exec('COMMIT')
    expect(ledger.flush()).toBe(true)
    expect(new HoldFile(db).all().map((h) => h.responseId)).toEqual(['resp_b'])
  })

  it('without a SQLite ledger (PostgreSQL keeps the calls) it writes the row at once', () => {
    const { db } = setUp()
    const file = new HoldFile(db)
    file.save(hold('resp_x'))
    expect(file.all().map((h) => h.responseId)).toEqual(['resp_x'])
    file.remove('openai', 'resp_x')
    expect(file.all()).toEqual([])
  })

  it('without a SQLite ledger, a hold kept while another connection writes the file is queued, in order, and written once it can be', async () => {
    const { db, other } = setUp()
    const holds = new BackgroundHolds()
    const file = new HoldFile(db)
    holds.file = file
    const onDisk = () => new HoldFile(db).all().map((h) => h.responseId).sort()
    other.exec('BEGIN IMMEDIATE')
    holds.keep(hold('resp_a'), () => {})
    holds.keep(hold('resp_b'), () => {})
    holds.release('openai', 'resp_b')
    // Not on disk yet, but kept (a restart's read through this file holds it again).
    expect(file.all().map((h) => h.responseId)).toEqual(['resp_a'])
    other.exec('COMMIT')
    // Written again a moment later, on its own (no call, no close).
    await eventually(() => onDisk().length > 0)
    expect(onDisk()).toEqual(['resp_a'])
    expect(file.all().map((h) => h.responseId)).toEqual(['resp_a'])

    // Busy at close: the server's last flush writes what is still queued once the file is free.
    other.exec('BEGIN IMMEDIATE')
    holds.release('openai', 'resp_a')
    file.flush()
    other.exec('COMMIT')
    file.flush()
    file.close()
    expect(onDisk()).toEqual([])
  })
})
