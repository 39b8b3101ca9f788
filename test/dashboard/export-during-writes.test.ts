import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { exportThreadsUsed, stopIdleExportThreads, useExportThread } from '../../src/main/dashboard/export-thread'
import { exportPausedAfterFirstBytes } from '../support/export-paused'
import { type TestServer, startTestServer } from '../support/server'
import { makeCall } from '../dashboard/seed'

/**
 * An export is a list of the window's calls. Calls committed while it streams must either all be
 * in it or all be out of it in the order they were committed: a call B committed after a call A
 * cannot be in the file while A (same window) is not, or the file matches no state the ledger
 * was ever in (its sum matches no dashboard reading). A call stamped earlier than the export's
 * cursor arrives whenever a long stream ends (a call is stamped when it arrived, written when it
 * ends), an agent log is imported, or a team member's calls are ingested. The export holds the
 * calls of the moment it began: both are left out, on the main thread as on export threads.
 */
const ROOT = resolve(__dirname, '../..')
const WORKER = join(ROOT, 'out/main/export-worker.js')
let t: TestServer
const now = Date.now()
const N = 40_000

beforeAll(async () => {
  t = await startTestServer({ timezone: 'UTC' })
  const start = now - 20 * 3_600_000
  for (let i = 0; i < N; i++) {
    t.server.ledger.record(makeCall({ ts: start + Math.floor((i * 19 * 3_600_000) / N), cost_usd: 0.001 }))
  }
  await t.server.ledger.flush()
}, 120_000)
afterAll(async () => {
  stopIdleExportThreads()
  await t.cleanup()
})

let round = 0
/** Exports the last 24 hours, committing A (stamped at the window's first minute) then B (30 minutes ago) once its first bytes are in. */
function exportWhileCommitting(): Promise<{ hasA: boolean; hasB: boolean; rows: number }> {
  const [a, b] = [`call-A${round}`, `call-B${round++}`]
  return exportPausedAfterFirstBytes(t.url, '/api/dashboard/export?range=24h&format=csv', async () => {
    // The first page (the window's first ~hour) is written; the server waits for the socket to drain.
    await new Promise((r) => setTimeout(r, 300))
    // A: a long stream that arrived 20 hours ago (minute 1 of the window) ends now.
    t.server.ledger.record(makeCall({ ts: now - 20 * 3_600_000 + 60_000, cost_usd: 1, session: a }))
    await t.server.ledger.flush()
    // B: a call that arrived half an hour ago ends after it.
    t.server.ledger.record(makeCall({ ts: now - 30 * 60_000, cost_usd: 2, session: b }))
    await t.server.ledger.flush()
  }).then((body) => ({ hasA: body.includes(`,${a},`), hasB: body.includes(`,${b},`), rows: body.trim().split('\r\n').length - 1 }))
}

describe('export while calls are committed', () => {
  it('has call B (committed second) only together with call A (committed first)', async () => {
    // Calls recorded by an earlier test of this file were there when this export began.
    const before = N + 2 * round
    const got = await exportWhileCommitting()
    // B only with A (a snapshot at any moment); as of the export's start, neither.
    expect(got).toEqual({ hasA: false, hasB: false, rows: before })
  }, 60_000)

  it('on export threads too (their segments reach past the window\'s last call at the start)', async () => {
    if (!existsSync(WORKER)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
    useExportThread(WORKER, { threads: 1, minRows: 0, mainRows: 2000 })
    const used = exportThreadsUsed()
    const before = N + 2 * round
    const got = await exportWhileCommitting()
    expect(exportThreadsUsed() - used).toBe(1)
    expect(got).toEqual({ hasA: false, hasB: false, rows: before })
  }, 120_000)
})
