import { chmodSync, chownSync, lchownSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { AgentConnections } from '../../src/main/connect/connections'

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
})
