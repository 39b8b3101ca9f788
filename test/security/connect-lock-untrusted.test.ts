import { execFileSync } from 'node:child_process'
import { chmodSync, chownSync, existsSync, lchownSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { ConnectError } from '../../src/main/connect/errors'
import { LOCK_FILE, exclusive } from '../../src/main/connect/lock'
import { processStart } from '../../src/main/server/data-lock'

/**
 * connect's lock (agent-connections.lock) in a data folder other users may write: what another
 * user put under its name is neither read (its pid and date are theirs to choose; a FIFO would
 * hang the read for good) nor taken over. Burnrate stops with one error naming the file.
 */
const OTHER = 65534 // nobody
const asRoot = process.getuid?.() === 0
let dirs: string[] = []
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
  dirs = []
})
/** A data folder anyone may write (no sticky bit), as a shared one is. */
const sharedFolder = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'burnrate-connect-lock-'))
  dirs.push(d)
  chmodSync(d, 0o777)
  return d
}
/** A lock naming a process that runs (init): read and believed, it says another Burnrate holds it. */
const liveHolder = JSON.stringify({ pid: 1, proc_start: processStart(1) ?? undefined })

function refusal(dir: string): ConnectError {
  let ran = false
  try {
    exclusive(dir, () => (ran = true))
  } catch (err) {
    expect(ran).toBe(false)
    expect(err).toBeInstanceOf(ConnectError)
    return err as ConnectError
  }
  throw new Error('the lock was taken')
}

describe("connect's lock, planted by another user", () => {
  it.runIf(asRoot)("another user's lock is not read: the error names the file and whose it is, and leaves it", () => {
    const dir = sharedFolder()
    chownSync(dir, OTHER, OTHER)
    const lock = join(dir, LOCK_FILE)
    writeFileSync(lock, liveHolder)
    chownSync(lock, OTHER, OTHER)
    const err = refusal(dir)
    expect(err.message).toContain(lock)
    expect(err.message).toMatch(/another user \(uid 65534\)/)
    // Not the holder it names: that was theirs to choose.
    expect(err.message).not.toMatch(/pid 1\b/)
    expect(readFileSync(lock, 'utf8')).toBe(liveHolder)
  })

  it('a FIFO under its name is not opened for reading (which would wait for a writer for good)', () => {
    const dir = sharedFolder()
    const lock = join(dir, LOCK_FILE)
    execFileSync('mkfifo', [lock])
    const err = refusal(dir)
    expect(err.message).toContain(lock)
    expect(err.message).toMatch(/not a regular file/)
    expect(existsSync(lock)).toBe(true)
  })

  it("a link under its name is not followed, even one to a file of the user's that names a live process", () => {
    const dir = sharedFolder()
    const target = join(mkdtempSync(join(tmpdir(), 'burnrate-connect-lock-target-')), 'notes.json')
    dirs.push(join(target, '..'))
    writeFileSync(target, liveHolder)
    const lock = join(dir, LOCK_FILE)
    symlinkSync(target, lock)
    if (asRoot) lchownSync(lock, OTHER, OTHER)
    const err = refusal(dir)
    expect(err.message).toContain(lock)
    expect(err.message).toMatch(/link/)
    expect(err.message).not.toMatch(/pid 1\b/)
    expect(readFileSync(target, 'utf8')).toBe(liveHolder)
  })

  it("the user's own lock left by a crash is still taken over, and one of a live Burnrate still a conflict", () => {
    const dir = sharedFolder()
    const lock = join(dir, LOCK_FILE)
    writeFileSync(lock, JSON.stringify({ pid: 999_999_999 }), { mode: 0o600 })
    expect(exclusive(dir, (crashed) => crashed)).toEqual(expect.any(Number))
    expect(existsSync(lock)).toBe(false)
    writeFileSync(lock, liveHolder, { mode: 0o600 })
    expect(refusal(dir).message).toMatch(/Another Burnrate \(pid 1\)/)
  })
})
