import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { RollupWriter } from '../../src/main/dashboard/rollup/writer'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import { packCalls } from '../../src/main/ledger/packed'
import type { CallRecord } from '../../src/main/ledger/record'
import { WriteThread } from '../../src/main/ledger/write-thread'
import { makeCall } from '../dashboard/seed'
import { eventually } from '../support/http'

/**
 * A write thread the ledger gives up on (no answer within its wait, or the thread died) may
 * have committed the batch it held: the ledger writes that batch again on its own thread, and a
 * thread stuck past the give-up may commit after it. Either order stores each call once, and the
 * dashboard rollups count it once. Real parts: the built out/main/ledger-worker.js on a real file.
 */
const WORKER = resolve(__dirname, '../../out/main/ledger-worker.js')

const cleanup: (() => void)[] = []
afterEach(() => {
  for (const c of cleanup.splice(0).reverse()) c()
})

function setup() {
  if (!existsSync(WORKER)) execFileSync('npx', ['electron-vite', 'build'], { cwd: resolve(__dirname, '../..'), stdio: 'ignore' })
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-given-up-'))
  const file = join(dir, 'burnrate.db')
  const db = openDatabase(file)
  const ledger = new Ledger(db, { flushIntervalMs: 20, maxPending: 100_000, timezone: 'UTC', writeThread: WORKER })
  const rollups = new RollupWriter(db)
  ledger.onBatch((rows) => rollups.onBatch(rows), 'rollups')
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }), () => db.close(), () => ledger.close())
  const counts = () => {
    const ro = new Database(file, { readonly: true })
    try {
      return {
        calls: ro.prepare('SELECT count(*) FROM calls').pluck().get() as number,
        keys: ro.prepare('SELECT count(DISTINCT call_key) FROM calls').pluck().get() as number,
        rolled: ro.prepare('SELECT coalesce(sum(requests), 0) FROM dash_5m').pluck().get() as number,
        cost: ro.prepare('SELECT total(cost_usd) FROM calls').pluck().get() as number,
      }
    } finally {
      ro.close()
    }
  }
  /** What `BatchWriter.landInFlight` does with a batch it takes back from a thread it gives up: queued here, ahead of the rest. */
  const takeBack = (rows: CallRecord[]) => {
    const q = (ledger as unknown as { queue: { calls: CallRecord[] } }).queue
    q.calls = rows.concat(q.calls)
  }
  return { ledger, file, counts, takeBack }
}

describe('a batch of a write thread that is given up', () => {
  it('committed by the thread, then written again by the ledger: stored and rolled up once', async () => {
    const { ledger, counts, takeBack } = setup()
    const rows = Array.from({ length: 50 }, () => makeCall({ ts: Date.now(), cost_usd: 0.25 }))
    for (const r of rows) ledger.record(r)
    await eventually(() => counts().calls === 50) // the thread committed the batch
    await eventually(() => ledger.status.pending === 0)
    // Its answer did not come in time (or the thread died after the COMMIT): the ledger takes the batch back.
    takeBack(rows)
    expect(ledger.flush()).toBe(true)
    expect(counts()).toEqual({ calls: 50, keys: 50, rolled: 50, cost: 12.5 })
  })

  it('written by the ledger, then committed by the thread it gave up: stored and rolled up once', async () => {
    const { ledger, file, counts, takeBack } = setup()
    const rows = Array.from({ length: 50 }, () => makeCall({ ts: Date.now(), cost_usd: 0.25 }))
    for (const r of rows) ledger.record(r)
    await eventually(() => counts().calls === 50)
    await eventually(() => ledger.status.pending === 0)
    // The same batch, as the stuck thread still holds it (packed, with its keys), goes in after the ledger's own write.
    const late = WriteThread.start(WORKER, file)!
    cleanup.push(() => late.close())
    await eventually(() => late.ready)
    late.send({ type: 'rollups' })
    let answer: { ok: boolean; message?: string } | null = null
    late.send({ type: 'write', rows: packCalls(rows)! }, (r) => (answer = r))
    await eventually(() => answer !== null)
    expect(answer).toMatchObject({ ok: true })
    expect(counts()).toEqual({ calls: 50, keys: 50, rolled: 50, cost: 12.5 })
    // And a batch holding some stored calls and some new ones stores the new ones (and rolls them up) only.
    const more = [makeCall({ ts: Date.now(), cost_usd: 1 }), makeCall({ ts: Date.now(), cost_usd: 2 })]
    takeBack([...rows.slice(0, 10), ...more])
    expect(ledger.flush()).toBe(true)
    expect(counts()).toEqual({ calls: 52, keys: 50, rolled: 52, cost: 15.5 })
  })
})
