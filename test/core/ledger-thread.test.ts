import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { RollupWriter } from '../../src/main/dashboard/rollup/writer'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import { makeCall } from '../dashboard/seed'
import { eventually } from '../support/http'

/**
 * The ledger's write thread, as the headless server runs it: the built out/main/ledger-worker.js
 * (`npm test` builds first). Batches due on the timer are written there; a synchronous flush
 * still finds every call on disk; a refused write is handled by the main thread as always.
 */
const WORKER = resolve(__dirname, '../../out/main/ledger-worker.js')

const open: { ledger: Ledger; db: Database.Database; dir: string }[] = []
afterEach(() => {
  for (const o of open.splice(0)) {
    o.ledger.close()
    o.db.close()
    rmSync(o.dir, { recursive: true, force: true })
  }
})

function setup(threadIdleMs?: number) {
  if (!existsSync(WORKER)) execFileSync('npx', ['electron-vite', 'build'], { cwd: resolve(__dirname, '../..'), stdio: 'ignore' })
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-thread-'))
  const file = join(dir, 'burnrate.db')
  const db = openDatabase(file)
  const ledger = new Ledger(db, { flushIntervalMs: 20, maxPending: 100_000, timezone: 'UTC', writeThread: WORKER, threadIdleMs })
  const rollups = new RollupWriter(db)
  const here = { rows: 0 }
  // This thread's copy of the hook: it runs only for the batches written on this thread.
  ledger.onBatch((rows) => {
    here.rows += rows.length
    rollups.onBatch(rows)
  }, 'rollups')
  open.push({ ledger, db, dir })
  const counts = () => {
    const ro = new Database(file, { readonly: true })
    try {
      return {
        calls: ro.prepare('SELECT count(*) FROM calls').pluck().get() as number,
        rolled: (ro.prepare('SELECT coalesce(sum(requests), 0) FROM dash_5m').pluck().get() as number) ?? 0,
        cost: ro.prepare('SELECT total(cost_usd) FROM calls').pluck().get() as number,
      }
    } finally {
      ro.close()
    }
  }
  return { ledger, db, file, here, counts }
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('ledger write thread', () => {
  it('writes the batches due on the timer off the main thread, calls and rollups together', async () => {
    const { ledger, here, counts } = setup()
    await eventually(() => ledger.writesOnThread) // the thread has opened its connection
    for (let i = 0; i < 500; i++) ledger.record(makeCall({ ts: Date.now(), cost_usd: 0.001 }))
    await eventually(() => counts().calls === 500)
    expect(counts().rolled).toBe(500)
    expect(here.rows).toBe(0)
    // The batch is on disk once the thread commits; it stops counting as pending when the thread's
    // answer reaches this thread, a moment later on a busy machine.
    await eventually(() => ledger.status.pending === 0)
    expect(ledger.status).toMatchObject({ writable: true, pending: 0, last_error: null })
  })

  it('a synchronous flush waits for the batch the thread is writing: every call on disk once, when it returns', async () => {
    const { ledger, counts } = setup()
    await eventually(() => ledger.writesOnThread)
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 200; i++) ledger.record(makeCall({ ts: Date.now(), cost_usd: 0.25 }))
      await settle(21 + (round % 3)) // the timer hands a batch over; flush lands while it may be in flight
      for (let i = 0; i < 50; i++) ledger.record(makeCall({ ts: Date.now(), cost_usd: 0.25 }))
      expect(ledger.flush()).toBe(true)
      const c = counts()
      expect(c.calls).toBe((round + 1) * 250)
      expect(c.rolled).toBe((round + 1) * 250)
    }
    expect(counts().cost).toBe(20 * 250 * 0.25)
  })

  it('a batch the thread cannot write (database locked) is kept and written once by the main thread when it can', async () => {
    const { ledger, file, counts } = setup()
    await eventually(() => ledger.writesOnThread)
    const locker = new Database(file)
    locker.exec('BEGIN IMMEDIATE')
    try {
      for (let i = 0; i < 100; i++) ledger.record(makeCall({ ts: Date.now() }))
      await eventually(() => ledger.status.writable === false, 10_000)
      expect(ledger.status.pending).toBe(100)
      expect(ledger.status.last_error).toMatch(/SQLITE_BUSY/)
    } finally {
      locker.exec('ROLLBACK')
      locker.close()
    }
    await eventually(() => ledger.status.writable && counts().calls === 100, 10_000)
    expect(counts().rolled).toBe(100)
    expect(ledger.status.pending).toBe(0)
  }, 30_000)

  it("a reader's flush waits for the thread's batch without stopping this thread while another process holds the lock", async () => {
    const { ledger, file, counts } = setup()
    await eventually(() => ledger.writesOnThread)
    const locker = new Database(file)
    locker.exec('BEGIN IMMEDIATE')
    let flushed: Promise<boolean>
    try {
      for (let i = 0; i < 10; i++) ledger.record(makeCall({ ts: Date.now() }))
      // The timer has handed the batch to the thread, which now waits for the lock (up to 2 s).
      await eventually(() => ledger.status.pending === 10 && (ledger as unknown as { queue: { inFlight: { busy: boolean } } }).queue.inFlight.busy)
      flushed = ledger.flushed()
      let done = false
      void flushed.then(() => (done = true))
      // This thread goes on meanwhile (it blocked until the thread gave up: dashboard polls paused every stream).
      await new Promise((r) => setTimeout(r, 0))
      expect(done).toBe(false)
    } finally {
      locker.exec('ROLLBACK')
      locker.close()
    }
    await flushed
    await eventually(() => ledger.status.writable && counts().calls === 10, 10_000)
    expect(ledger.status.pending).toBe(0)
  }, 30_000)

  it('starts no thread until the first batch, ends it after an idle period, and starts another for the next: every call written once, on the thread', async () => {
    const { ledger, here, counts } = setup(150)
    expect(ledger.writesOnThread).toBe(true)
    expect(ledger.threadRunning).toBe(false) // an idle ledger holds no thread
    let recorded = 0
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 100; i++) ledger.record(makeCall({ ts: Date.now(), cost_usd: 0.5 }))
      recorded += 100
      expect(ledger.threadRunning).toBe(false) // recording never starts it: the batch due on the timer does
      await eventually(() => ledger.threadRunning)
      await eventually(() => counts().calls === recorded)
      await eventually(() => !ledger.threadRunning) // idle: ended, its connection closed
      expect(counts()).toEqual({ calls: recorded, rolled: recorded, cost: recorded * 0.5 })
    }
    expect(here.rows).toBe(0) // every batch went to a write thread, each with the rollups
    expect(ledger.status).toMatchObject({ writable: true, pending: 0, dropped: 0, last_error: null })
  })

  it('calls recorded while the idle thread is ending are written by the next one; a flush at any moment finds all of them', async () => {
    const { ledger, here, counts } = setup(25)
    let recorded = 0
    for (let round = 0; round < 30; round++) {
      const n = 1 + (round % 7)
      for (let i = 0; i < n; i++) ledger.record(makeCall({ ts: Date.now(), cost_usd: 0.125 }))
      recorded += n
      // Gaps around the idle period: some batches find the thread running, some ending, some none.
      await settle(15 + ((round * 7) % 30))
      if (round % 5 === 4) {
        expect(ledger.flush()).toBe(true)
        expect(counts().calls).toBe(recorded)
      }
    }
    await eventually(() => counts().calls === recorded)
    expect(counts()).toEqual({ calls: recorded, rolled: recorded, cost: recorded * 0.125 })
    expect(ledger.status).toMatchObject({ pending: 0, dropped: 0 })
    expect(here.rows).toBeLessThan(recorded) // the threads wrote (a flush writes what is queued here)
  })
})
