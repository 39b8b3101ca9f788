import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { CLI, ROOT } from '../load/harness'
import { killAndWait, listenedOrExited } from '../support/child'
import { eventually } from '../support/http'

/**
 * Three Burnrates and a stale server.lock (./data-folder-lock-race.test.ts has two): A takes it
 * over and serves the folder; B, which read the stale lock before, moves A's claim aside to judge
 * it and puts it back; C, started while the name is free, makes its claim there. Builds before
 * this one let C serve the folder beside A (B's put-back found C's claim and gave A's up). The
 * built CLI; B paused before and after its move (./lock-moved-preload.mjs).
 */

const MOVED = pathToFileURL(join(ROOT, 'test/faults/lock-moved-preload.mjs')).href
const NO_LINKS = pathToFileURL(join(ROOT, 'test/faults/no-links-preload.mjs')).href
const env = { ...process.env, BURNRATE_PRICE_AUTO_UPDATE: 'false', BURNRATE_CONFIG: '', BURNRATE_PORT: '', BURNRATE_DATA_DIR: '' }

let dir: string
const children: ChildProcess[] = []
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-lock-three-'))
  writeFileSync(join(dir, 'cfg.yaml'), 'server:\n  port: 0\n')
})
afterEach(async () => {
  await killAndWait(children)
  rmSync(dir, { recursive: true, force: true })
})

const lockFile = () => join(dir, 'server.lock')
const gate = () => join(dir, 'gate')
const holder = () => (JSON.parse(readFileSync(lockFile(), 'utf8')) as { pid: number }).pid

/** A Burnrate on the folder: resolves once it listens or exits, with what it printed. `paused`: B's preload. */
function burnrate(paused: boolean, noLinks: string): { child: ChildProcess; outcome: Promise<{ listening?: string; exit?: number | null; output: string }> } {
  const args = [...(paused ? ['--import', MOVED] : []), ...(noLinks ? ['--import', NO_LINKS] : []), CLI, '--config', join(dir, 'cfg.yaml'), '--data-dir', dir, '--port', '0']
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...env, ...(paused ? { BURNRATE_TEST_LOCK_GATE: gate() } : {}), ...(noLinks ? { BURNRATE_TEST_LINK_ERROR: noLinks, BURNRATE_TEST_LINK_DIR: dir } : {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.push(child)
  return { child, outcome: listenedOrExited(child) }
}

const refusal = (pid: number | undefined) => new RegExp(`another Burnrate \\(pid ${pid}\\) serves this data folder`)

describe('three Burnrates at a stale server.lock', () => {
  it.each([
    ['', 'links'],
    ['EPERM', 'no hard links (a FAT drive on Linux)'],
  ])('one serves the folder: the one that claimed it while another judged the holder\'s claim refuses (%s: %s)', async (noLinks) => {
    writeFileSync(lockFile(), JSON.stringify({ pid: spawnSync(process.execPath, ['-e', '']).pid!, url: 'http://127.0.0.1:8787', started_at: new Date().toISOString(), claim: 'gone' }), { mode: 0o600 })
    // B has found the lock stale, and is about to move it aside ...
    const b = burnrate(true, noLinks)
    await eventually(() => existsSync(`${gate()}.paused`) || undefined, 60_000)
    // ... as A takes it over and serves the folder.
    const a = burnrate(false, noLinks)
    const first = await a.outcome
    expect(first.listening, first.output).toBeDefined()
    // B moves what is under the name now, A's claim, aside.
    writeFileSync(gate(), '')
    await eventually(() => existsSync(`${gate()}.moved`) || undefined, 60_000)
    expect(existsSync(lockFile())).toBe(false)
    // C, started now, finds the name free and claims the folder.
    const c = burnrate(false, noLinks)
    await eventually(() => (existsSync(lockFile()) && holder() === c.child.pid) || undefined, 60_000)
    // B finds A's claim a live one and puts it back.
    writeFileSync(`${gate()}.2`, '')
    const second = await b.outcome
    const third = await c.outcome
    expect({ b: second.exit, c: third.exit ?? `listening at ${third.listening}` }, `b:\n${second.output}\nc:\n${third.output}`).toEqual({ b: 1, c: 1 })
    expect(second.output).toMatch(refusal(a.child.pid))
    expect(third.output).toMatch(refusal(a.child.pid))
    expect(holder()).toBe(a.child.pid)
  })

  it.each([
    ['', 'links'],
    ['EPERM', 'no hard links (a FAT drive on Linux)'],
  ])('one serves the folder when the one judging the holder\'s claim is killed with it moved aside (%s: %s)', async (noLinks) => {
    writeFileSync(lockFile(), JSON.stringify({ pid: spawnSync(process.execPath, ['-e', '']).pid!, url: 'http://127.0.0.1:8787', started_at: new Date().toISOString(), claim: 'gone' }), { mode: 0o600 })
    const b = burnrate(true, noLinks)
    await eventually(() => existsSync(`${gate()}.paused`) || undefined, 60_000)
    const a = burnrate(false, noLinks)
    const first = await a.outcome
    expect(first.listening, first.output).toBeDefined()
    // B moves A's claim aside, and is killed there (a crash, the OOM killer) before it puts it back.
    writeFileSync(gate(), '')
    await eventually(() => existsSync(`${gate()}.moved`) || undefined, 60_000)
    expect(existsSync(lockFile())).toBe(false)
    b.child.kill('SIGKILL')
    await b.outcome
    // C, started now, finds the name free: A's claim is put back, and C refuses.
    const c = burnrate(false, noLinks)
    const third = await c.outcome
    expect({ c: third.exit ?? `listening at ${third.listening}` }, third.output).toEqual({ c: 1 })
    expect(third.output).toMatch(refusal(a.child.pid))
    expect(holder()).toBe(a.child.pid)
  })
})
