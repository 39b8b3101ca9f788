import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { exportThreadsUsed, stopIdleExportThreads, useExportThread } from '../../src/main/dashboard/export-thread'
import { createLogger } from '../../src/main/log'
import { exportStalled } from '../support/export-paused'
import { eventually } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { makeCall } from './seed'

/**
 * An export on SQLite whose client stops reading without hanging up (a stalled tab, a script
 * paused in a debugger). It holds no read of the ledger while it waits (each page is one
 * statement run to its end; none stays open between pages, on the main thread or on an export
 * thread), so the ledger keeps writing and checkpointing its WAL to the end: a long-held read
 * would starve the checkpoint and let the WAL grow without bound. And, as on PostgreSQL, once its
 * client has taken none of its bytes for `dashboard.export_stall_ms` it is ended (its threads
 * and the pages they read ahead are let go), the client sees a cut-off download, and one line
 * is logged.
 */
const ROOT = resolve(__dirname, '../..')
const WORKER = join(ROOT, 'out/main/export-worker.js')
const N = 40_000
const PATH = '/api/dashboard/export?range=24h&format=json'
const now = Date.now()
const servers: TestServer[] = []

afterAll(async () => {
  stopIdleExportThreads()
  for (const t of servers) await t.cleanup()
})

/** A server whose ledger holds N calls of the last 20 hours. */
async function seeded(stallMs: number, lines: string[] = []): Promise<TestServer> {
  const log = createLogger('info', (l) => lines.push(l))
  const t = await startTestServer({ timezone: 'UTC', dashboard: { export_stall_ms: stallMs } }, undefined, undefined, { log })
  servers.push(t)
  for (let i = 0; i < N; i++) t.server.ledger.record(makeCall({ ts: now - 20 * 3_600_000 + i * 1000, cost_usd: 0.001 }))
  await t.server.ledger.flush()
  return t
}

/**
 * Whether a TRUNCATE checkpoint of the ledger is held up now: it must copy every frame of the
 * WAL into the file and then wait for every reader to be done with the WAL (a writer's commit
 * is waited for, up to the connection's 5 s busy timeout).
 */
function checkpointHeldUp(file: string): boolean {
  const db = new Database(file)
  try {
    const [r] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[]
    return r.busy !== 0
  } finally {
    db.close()
  }
}

/** Commits a few calls, as the proxy does while the export waits on its client. */
async function write(t: TestServer, n: number): Promise<void> {
  for (let i = 0; i < n; i++) t.server.ledger.record(makeCall({ ts: now - 60_000, cost_usd: 0.5 }))
  await t.server.ledger.flush()
}

describe('a stalled export on SQLite', () => {
  it('holds no read: the ledger writes and checkpoints its WAL to the end while it waits (main thread, then export threads)', async () => {
    // A limit this test never reaches: the exports stay stalled while the checkpoints run.
    const t = await seeded(600_000)

    // The probe sees a reader that holds a snapshot (a statement left open part-way).
    const reader = new Database(t.dbFile, { readonly: true })
    const open = reader.prepare('SELECT id FROM calls').iterate()
    open.next()
    await write(t, 10)
    expect(checkpointHeldUp(t.dbFile)).toBe(true)
    open.return?.()
    reader.close()
    expect(checkpointHeldUp(t.dbFile)).toBe(false)

    const main = exportStalled(t.url, PATH)
    await main.begun
    await write(t, 10)
    expect(checkpointHeldUp(t.dbFile)).toBe(false)

    if (!existsSync(WORKER)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
    useExportThread(WORKER, { threads: 2, minRows: 0, mainRows: 2000 })
    const used = exportThreadsUsed()
    const threaded = exportStalled(t.url, PATH)
    await threaded.begun
    expect(exportThreadsUsed() - used).toBe(2)
    await write(t, 10)
    expect(checkpointHeldUp(t.dbFile)).toBe(false)

    // Read on, they are whole: nothing here ended them.
    expect(await Promise.all([main.readOn(), threaded.readOn()])).toEqual(['whole', 'whole'])
  }, 120_000)

  it('is ended after the stall limit (on export threads) and logged once; the next export is whole', async () => {
    const lines: string[] = []
    const t = await seeded(1500, lines)
    const stalled = () => lines.filter((l) => l.includes('export stalled')).length
    // On export threads (set by the test before), which read pages ahead of the socket.
    const used = exportThreadsUsed()
    const a = exportStalled(t.url, PATH)
    await a.begun
    expect(exportThreadsUsed() - used).toBe(2)
    await eventually(() => stalled() === 1, 60_000)
    expect(await a.readOn()).toBe('cut')

    // The next export is whole.
    const r = await fetch(`${t.url}${PATH}`)
    expect(r.status).toBe(200)
    expect(((await r.json()) as { calls: unknown[] }).calls.length).toBe(N)
    expect(stalled()).toBe(1)
  }, 120_000)
})
