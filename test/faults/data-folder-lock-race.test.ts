import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { CLI, ROOT } from '../load/harness'
import { killAndWait, listenedOrExited } from '../support/child'
import { eventually } from '../support/http'

/**
 * Two Burnrates started at once on one data folder (a service and the desktop app at login, a
 * service manager restarting one while another starts): one serves it, the other refuses, as when
 * they start one after the other (./data-folder-lock.test.ts). The built CLI; the first one is
 * paused at one point of its claim (./lock-pause-preload.mjs) and the second started then.
 */

const PRELOAD = pathToFileURL(join(ROOT, 'test/faults/lock-pause-preload.mjs')).href
const NO_LINKS = pathToFileURL(join(ROOT, 'test/faults/no-links-preload.mjs')).href
const env = { ...process.env, BURNRATE_PRICE_AUTO_UPDATE: 'false', BURNRATE_CONFIG: '', BURNRATE_PORT: '', BURNRATE_DATA_DIR: '' }

let dir: string
const children: ChildProcess[] = []
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-lock-race-'))
})
afterEach(async () => {
  await killAndWait(children)
  rmSync(dir, { recursive: true, force: true })
})

const lockFile = () => join(dir, 'server.lock')
const gate = () => join(dir, 'gate')

interface Run {
  child: ChildProcess
  /** Resolves once it listens ({listening: url}) or exits ({exit: code}), with what it printed. */
  outcome: Promise<{ listening?: string; exit?: number | null; output: string }>
}

/** `noLinks`: hard links cannot be made in the data folder (a FAT drive: ./no-links-preload.mjs), link() failing with that code. */
function burnrate(pause?: 'create' | 'takeover', noLinks?: string): Run {
  const cfg = join(dir, 'cfg.yaml')
  if (!existsSync(cfg)) writeFileSync(cfg, 'server:\n  port: 0\n')
  const args = [...(pause ? ['--import', PRELOAD] : []), ...(noLinks ? ['--import', NO_LINKS] : []), CLI, '--config', cfg, '--data-dir', dir, '--port', '0']
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {
      ...env,
      ...(pause ? { BURNRATE_TEST_LOCK_PAUSE: pause, BURNRATE_TEST_LOCK_GATE: gate() } : {}),
      ...(noLinks ? { BURNRATE_TEST_LINK_ERROR: noLinks, BURNRATE_TEST_LINK_DIR: dir } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.push(child)
  return { child, outcome: listenedOrExited(child) }
}

/** A pid that no process has now. */
async function deadPid(): Promise<number> {
  const c = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' })
  await new Promise((r) => c.once('spawn', r))
  const pid = c.pid!
  await new Promise((r) => {
    c.once('exit', r)
    c.kill('SIGKILL')
  })
  return pid
}

const refusal = (pid: number | undefined) => new RegExp(`another Burnrate \\(pid ${pid}\\) serves this data folder`)

describe('two Burnrates claiming one data folder at once', () => {
  it('the second, started as the first has just made server.lock, refuses: it never finds the lock empty and takes it over', async () => {
    const a = burnrate('create')
    await eventually(() => existsSync(lockFile()) || undefined, 60_000)
    const b = await burnrate().outcome
    writeFileSync(gate(), '')
    const first = await a.outcome
    expect({ a: first.listening !== undefined, b: b.exit }, `a:\n${first.output}\nb:\n${b.output}`).toEqual({ a: true, b: 1 })
    expect(b.output).toMatch(refusal(a.child.pid))
    expect(JSON.parse(readFileSync(lockFile(), 'utf8')).pid).toBe(a.child.pid)
  })

  it.each([
    ['', 'links'],
    ['EPERM', 'no hard links (a FAT drive on Linux)'],
    ['EISDIR', 'no hard links (a FAT drive on Windows)'],
  ])('of two taking over a stale lock, the one that finds the other has taken it over already refuses: it does not remove the other\'s lock (%s: %s)', async (noLinks) => {
    writeFileSync(lockFile(), JSON.stringify({ pid: await deadPid(), url: 'http://127.0.0.1:8787', started_at: new Date().toISOString(), claim: 'gone' }), { mode: 0o600 })
    const a = burnrate('takeover', noLinks || undefined)
    // A has found the lock stale, and is about to take it over.
    await eventually(() => existsSync(`${gate()}.paused`) || undefined, 60_000)
    const b = burnrate(undefined, noLinks || undefined)
    const second = await b.outcome
    expect(second.listening, second.output).toBeDefined()
    writeFileSync(gate(), '')
    const first = await a.outcome
    expect({ a: first.exit, b: second.listening !== undefined }, `a:\n${first.output}\nb:\n${second.output}`).toEqual({ a: 1, b: true })
    expect(first.output).toMatch(refusal(b.child.pid))
    expect(JSON.parse(readFileSync(lockFile(), 'utf8')).pid).toBe(b.child.pid)
  })
})
