import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { startTestServer } from '../support/server'
import { CLI, ROOT } from '../load/harness'
import { eventually } from '../support/http'

/**
 * A server killed between two steps of its claim of the data folder (./lock-kill-preload.mjs)
 * leaves what that step made beside server.lock: the lock written to a file of its own, or a stale
 * lock it moved aside. The next server to claim the folder removes what a process that no longer
 * runs left, and leaves what a running one has there.
 */

const KILL = pathToFileURL(join(ROOT, 'test/faults/lock-kill-preload.mjs')).href
const env = { ...process.env, BURNRATE_PRICE_AUTO_UPDATE: 'false', BURNRATE_CONFIG: '', BURNRATE_PORT: '', BURNRATE_DATA_DIR: '' }

let dir: string
const children: ChildProcess[] = []
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-lock-leftovers-'))
})
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})

/** What is beside server.lock in the data folder. */
const beside = () => readdirSync(dir).filter((n) => n.startsWith('server.lock.')).sort()

/** A pid no process has now. */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '']).pid!
}

describe('files a server killed in its claim left beside server.lock', () => {
  it.each([
    ['tmp', 'its lock written to a file of its own, not yet linked'],
    ['aside', 'a stale lock moved aside, not yet judged'],
  ])('are removed by the next server to claim the folder; a running one\'s are left (%s: %s)', async (at) => {
    if (at === 'aside') writeFileSync(join(dir, 'server.lock'), JSON.stringify({ pid: deadPid(), url: 'http://127.0.0.1:8787', started_at: new Date().toISOString(), claim: 'gone' }), { mode: 0o600 })
    writeFileSync(join(dir, 'cfg.yaml'), 'server:\n  port: 0\n')
    const killed = spawnSync(process.execPath, ['--import', KILL, CLI, '--config', join(dir, 'cfg.yaml'), '--data-dir', dir, '--port', '0'], {
      cwd: ROOT,
      env: { ...env, BURNRATE_TEST_LOCK_KILL: at },
      encoding: 'utf8',
      timeout: 60_000,
    })
    expect(killed.signal, killed.stderr).toBe('SIGKILL')
    const left = beside()
    expect(left).toHaveLength(1)
    // A running Burnrate's, in the middle of its own claim: left to it.
    const live = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' })
    children.push(live)
    const running = `server.lock.${live.pid}.0123456789ab.tmp`
    writeFileSync(join(dir, running), '', { mode: 0o600 })

    const t = await startTestServer({}, undefined, dir)
    try {
      expect(beside()).toEqual([running])
    } finally {
      await t.stop()
    }
  })

  it('are removed when their pid was given to another process since (a crash long ago), and never waited for', async () => {
    writeFileSync(join(dir, 'server.lock'), JSON.stringify({ pid: deadPid(), url: 'http://127.0.0.1:8787', started_at: new Date().toISOString(), claim: 'gone' }), { mode: 0o600 })
    writeFileSync(join(dir, 'cfg.yaml'), 'server:\n  port: 0\n')
    const killed = spawnSync(process.execPath, ['--import', KILL, CLI, '--config', join(dir, 'cfg.yaml'), '--data-dir', dir, '--port', '0'], {
      cwd: ROOT,
      env: { ...env, BURNRATE_TEST_LOCK_KILL: 'aside' },
      encoding: 'utf8',
      timeout: 60_000,
    })
    expect(killed.signal, killed.stderr).toBe('SIGKILL')
    const [left] = beside()
    expect(left).toMatch(/^server\.lock\.\d+\.[0-9a-f]{12}\.old$/)
    // The killed server's pid given to another process that runs now (weeks of uptime, or a reboot).
    const reused = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' })
    children.push(reused)
    const leftover = left.replace(/^server\.lock\.\d+\./, `server.lock.${reused.pid}.`)
    renameSync(join(dir, left), join(dir, leftover))
    // Older than a lock is ever kept aside (judged and put back or removed in milliseconds).
    await eventually(() => expect(Date.now() - statSync(join(dir, leftover)).ctimeMs).toBeGreaterThan(11_000), 30_000)
    // A running Burnrate's, made just now, in the middle of its own claim: left to it.
    const running = `server.lock.${reused.pid}.0123456789ab.tmp`
    writeFileSync(join(dir, running), '', { mode: 0o600 })

    const t = await startTestServer({}, undefined, dir)
    try {
      expect(beside()).toEqual([running])
    } finally {
      await t.stop()
    }
  })
})
