import { chmodSync, chownSync, lchownSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { AgentConnections } from '../../src/main/connect/connections'
import { writeTextFile } from '../../src/main/desktop-logic/json-file'
import { LOCK_FILE, claimDataDir } from '../../src/main/server/data-lock'

/**
 * Links another user of the machine can put in a folder both may write (a shared data folder,
 * one in /tmp without the sticky bit) under a name Burnrate is about to write or clean up: what
 * Burnrate does there must touch only the link, never the file or folder of the user's it points to.
 */
const OTHER = 65534 // nobody
const asRoot = process.getuid?.() === 0
let dirs: string[] = []
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
  dirs = []
})
const temp = (prefix: string): string => {
  const d = mkdtempSync(join(tmpdir(), prefix))
  dirs.push(d)
  return d
}
/** A data folder of another user's that anyone may write (no sticky bit). */
const sharedFolder = (): string => {
  const d = temp('burnrate-shared-links-')
  chmodSync(d, 0o777)
  chownSync(d, OTHER, OTHER)
  return d
}

describe('links another user planted in a shared data folder', () => {
  it.runIf(asRoot)("agent-backups/ linked to a folder of the user's, with a crashed-looking connect lock: connect's clean-up deletes nothing there", () => {
    const dir = sharedFolder()
    const home = temp('burnrate-shared-links-home-')
    // The user's own files, made just now.
    const docs = join(home, 'Documents')
    mkdirSync(join(docs, 'taxes'), { recursive: true })
    writeFileSync(join(docs, 'thesis.tex'), 'chapter 1\n')
    writeFileSync(join(docs, 'taxes', '2026.pdf'), '%PDF\n')
    // The other user's: the backups folder is a link to it, and a connect lock of a process that
    // is gone, dated long ago, so everything in the backups folder looks left by that crash.
    symlinkSync(docs, join(dir, 'agent-backups'))
    lchownSync(join(dir, 'agent-backups'), OTHER, OTHER)
    const lock = join(dir, 'agent-connections.lock')
    writeFileSync(lock, JSON.stringify({ pid: 999_999_999 }))
    chownSync(lock, OTHER, OTHER)
    utimesSync(lock, new Date(0), new Date(0))

    const conn = new AgentConnections({ home, env: { PATH: '' }, platform: 'linux', dataDir: dir })
    try {
      conn.disconnect('codex')
    } catch {
      // Not connected: beside the point.
    }
    expect(readdirSync(docs).sort()).toEqual(['taxes', 'thesis.tex'])
    expect(readFileSync(join(docs, 'taxes', '2026.pdf'), 'utf8')).toBe('%PDF\n')
  })

  it("server.lock swapped for a link after the server's claim: recording its address replaces the link, never writes the file it names", () => {
    const dir = temp('burnrate-shared-links-lock-')
    const victim = join(temp('burnrate-shared-links-victim-'), 'authorized_keys')
    const lock = claimDataDir(dir, 'http://127.0.0.1:8787')
    const file = join(dir, LOCK_FILE)
    // Another user swaps the lock for a link between the server's check that the lock is still
    // its own and its write (the file linked to holds the same text, as it did at the check).
    const claimed = readFileSync(file, 'utf8')
    writeFileSync(victim, claimed)
    rmSync(file)
    symlinkSync(victim, file)
    lock.listening('http://127.0.0.1:9999')
    expect(readFileSync(victim, 'utf8')).toBe(claimed)
    expect(lstatSync(file).isSymbolicLink()).toBe(false)
    expect(JSON.parse(readFileSync(file, 'utf8')).url).toBe('http://127.0.0.1:9999')
    expect(lstatSync(file).mode & 0o777).toBe(0o600)
    lock.release()
  })

  it("the desktop's state files: a link under the temporary file's name is not written through", () => {
    const dir = temp('burnrate-shared-links-state-')
    const victim = join(temp('burnrate-shared-links-victim-'), '.bashrc')
    writeFileSync(victim, 'export PATH=/usr/bin\n')
    const target = join(dir, 'window-state.json')
    const names = readdirSync(dir)
    // The temporary file's name is predictable (the pid); a link is planted under it.
    symlinkSync(victim, `${target}.${process.pid}.tmp`)
    writeTextFile(target, '{"width":800}\n')
    expect(readFileSync(victim, 'utf8')).toBe('export PATH=/usr/bin\n')
    expect(readFileSync(target, 'utf8')).toBe('{"width":800}\n')
    expect(lstatSync(target).mode & 0o777).toBe(0o600)
    expect(names).toEqual([])
  })
})
