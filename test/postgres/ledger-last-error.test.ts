import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { PgLedger } from '../../src/main/ledger/pg/pg-ledger'
import { createLogger } from '../../src/main/log'
import { LedgerLog } from '../../src/main/reliability/ledger-log'
import { makeCall } from '../dashboard/seed'
import { holdLock, lockWaiter, until, usePostgres } from '../support/pg-harness'

/**
 * `status.last_error` (/api/health's `ledger.last_error`, and the log's "the database cannot be
 * written (…)") says why PostgreSQL cannot be written, as on SQLite, also once calls had to be
 * dropped (their count is in `dropped`, their reason in the log); and clears once PostgreSQL takes
 * writes again. Builds before this one put "N call(s) were dropped: PostgreSQL is away…" there in
 * place of the connection error, kept it after PostgreSQL came back, and said it of calls dropped
 * while PostgreSQL answered (recorded faster than written).
 */

const h = usePostgres({ upstream: false })

/** A data folder beneath a plain file: no spill journal can be written there, so calls past the bound are dropped. */
function noSpillDir(): string {
  const file = join(h.tempDir('burnrate-pglasterr-'), 'not-a-folder')
  writeFileSync(file, '')
  return join(file, 'data')
}

describe('the PostgreSQL ledger: last_error once calls are dropped', () => {
  it('PostgreSQL away and calls dropped: last_error and the log keep the connection error', async () => {
    const lines: string[] = []
    const watch = new LedgerLog(createLogger('info', (l) => lines.push(l)))
    const away = h.store('postgres://burnrate@127.0.0.1:1/none')
    const ledger = new PgLedger(away, { flushIntervalMs: 20, maxPending: 5, timezone: 'UTC', dataDir: noSpillDir() }).start()
    ledger.record(makeCall({ session: 'first' }))
    await until('PostgreSQL found away', () => !ledger.status.writable)
    // Past the bound, with nowhere on disk to keep them: dropped, then the log's check (each second in a server).
    for (let i = 0; i < 8; i++) ledger.record(makeCall({ session: `a${i}` }))
    expect(ledger.status.dropped).toBeGreaterThan(0)
    watch.check(ledger.status)
    expect(ledger.status.last_error).toMatch(/ECONNREFUSED/)
    expect(lines.filter((l) => l.includes('cannot be written'))).toEqual([expect.stringMatching(/the database cannot be written \(.*ECONNREFUSED.*\); calls are kept/)])
    expect(lines.filter((l) => l.includes('dropped'))).toEqual([expect.stringMatching(/error .*call\(s\) were dropped: more than ledger.max_pending/)])
    await ledger.close()
  })

  it('PostgreSQL back after calls were dropped: writable, and last_error cleared (as on SQLite)', async () => {
    const url = h.database()
    const store = h.store(url)
    const ledger = new PgLedger(store, { flushIntervalMs: 20, maxPending: 5, timezone: 'UTC', dataDir: noSpillDir() }).start()
    expect(await ledger.flushed()).toBe(true)
    h.pg.stopServer()
    try {
      for (let i = 0; i < 8; i++) ledger.record(makeCall({ session: `c${i}` }))
      await until('PostgreSQL found away and calls dropped', () => !ledger.status.writable && ledger.status.dropped > 0)
      expect(ledger.status.last_error).not.toMatch(/dropped/)
    } finally {
      h.pg.startServer()
    }
    // Dropped the moment it is back, before the writer tries again (the start held the event loop).
    for (let i = 0; i < 8; i++) ledger.record(makeCall({ session: `d${i}` }))
    expect(await ledger.flushed()).toBe(true)
    expect(ledger.status.writable).toBe(true)
    expect(ledger.status.last_error).toBeNull()
    expect(ledger.status.dropped).toBe(11)
    await ledger.close()
  })

  it('calls dropped while PostgreSQL answers (recorded faster than written): last_error does not say it is away', async () => {
    const store = h.store(h.database())
    const ledger = new PgLedger(store, { flushIntervalMs: 60_000, maxPending: 5, timezone: 'UTC', dataDir: h.tempDir('burnrate-pglasterr-') }).start()
    for (let i = 0; i < 8; i++) ledger.record(makeCall({ session: `s${i}` }))
    expect(ledger.status.dropped).toBe(3)
    expect(ledger.status.last_error).toBeNull()
    expect(await ledger.flushed()).toBe(true)
    expect(ledger.status.last_error).toBeNull()
    await ledger.close()
  })
  it('a row PostgreSQL refuses: last_error says so after its batch, and clears at the next batch written (as on SQLite)', async () => {
    const store = h.store(h.database())
    const ledger = new PgLedger(store, { flushIntervalMs: 60_000, maxPending: 100, timezone: 'UTC', dataDir: h.tempDir('burnrate-pglasterr-') }).start()
    expect(await ledger.flushed()).toBe(true)
    await store.run(`CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.session = 'poison' THEN RAISE EXCEPTION 'refused by a trigger' USING ERRCODE = '23514'; END IF; RETURN NEW; END $$`)
    await store.run('CREATE TRIGGER refuse_poison BEFORE INSERT ON calls FOR EACH ROW EXECUTE FUNCTION refuse_poison()')
    ledger.record(makeCall({ session: 'poison' }))
    ledger.record(makeCall({ session: 'fine' }))
    expect(await ledger.flushed()).toBe(true)
    expect(ledger.status).toMatchObject({ writable: true, dropped: 1 })
    expect(ledger.status.last_error).toMatch(/could not be written and was dropped: .*refused by a trigger/)
    ledger.record(makeCall({ session: 'fine again' }))
    expect(await ledger.flushed()).toBe(true)
    expect(ledger.status).toMatchObject({ writable: true, dropped: 1, last_error: null })
    await ledger.close()
  })
  it('a stop while PostgreSQL is slow, after a batch dropped a row: the log does not call it away for that row', async () => {
    const url = h.database()
    const store = h.store(url)
    const lines: string[] = []
    const log = createLogger('info', (l) => lines.push(l))
    const ledger = new PgLedger(h.store(url), { flushIntervalMs: 60_000, maxPending: 100, timezone: 'UTC', dataDir: h.tempDir('burnrate-pglasterr-'), log, closeWaitMs: 200 }).start()
    expect(await ledger.flushed()).toBe(true)
    await store.run(`CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.session = 'poison' THEN RAISE EXCEPTION 'refused by a trigger' USING ERRCODE = '23514'; END IF; RETURN NEW; END $$`)
    await store.run('CREATE TRIGGER refuse_poison BEFORE INSERT ON calls FOR EACH ROW EXECUTE FUNCTION refuse_poison()')
    ledger.record(makeCall({ session: 'poison' }))
    expect(await ledger.flushed()).toBe(true)
    expect(ledger.status.last_error).toMatch(/was dropped/)
    // Another session holds the table: the next write waits, and the stop keeps its call on disk.
    const lock = await holdLock(store, 'LOCK TABLE calls IN EXCLUSIVE MODE')
    try {
      ledger.record(makeCall({ session: 'held' }))
      ledger.flush()
      await lockWaiter(store)
      await ledger.close()
    } finally {
      await lock.release()
    }
    const kept = lines.filter((l) => l.includes('kept in'))
    expect(kept).toEqual([expect.stringMatching(/PostgreSQL did not take the last writes in time; 1 call\(s\) kept in/)])
    expect(kept[0]).not.toContain('refused by a trigger')
  })
})
