import { spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { AgentConnections } from '../../src/main/connect/connections'
import { LOCK_FILE } from '../../src/main/connect/lock'
import { BACKUP_DIR } from '../../src/main/connect/state'
import { CLAUDE, CODEX, ENV, lockConnects } from './connect-lock-support'

/**
 * Two Burnrates (the desktop app and `burnrate connect`) finding the lock a crashed Burnrate left
 * at the same moment: both judged it a crash's and took it over, the later one deleting the lock
 * the first had just made, so both changed the agents' files at once. One connection's record was
 * then written over by the other's, its agent left pointed at Burnrate with nothing Disconnect
 * could undo. Each process is stopped at a file operation (SIGSTOP), so the order is set, not timed.
 */
const { dirs, stopped } = lockConnects('burnrate-lock-takeover-')

describe.skipIf(process.platform !== 'linux')('a lock left by a crash, found by two Burnrates at once', () => {
  it.each([
    ['', 'links'],
    ['EPERM', 'no hard links (a FAT drive on Linux)'],
    ['EISDIR', 'no hard links (a FAT drive on Windows)'],
  ])('is taken over by one of them: the other is refused while it holds it, and no record is lost (%s: %s)', async (noLinks) => {
    const { home, dataDir } = dirs()
    const claude = join(home, '.claude', 'settings.json')
    const codex = join(home, '.codex', 'config.toml')
    mkdirSync(join(home, '.claude'))
    mkdirSync(join(home, '.codex'))
    writeFileSync(claude, CLAUDE)
    writeFileSync(codex, CODEX)
    mkdirSync(dataDir, { mode: 0o700 })
    // A Burnrate that crashed holding the lock: its process is gone.
    const dead = spawnSync(process.execPath, ['-e', '']).pid!
    const lock = join(dataDir, LOCK_FILE)
    writeFileSync(lock, JSON.stringify({ pid: dead }), { mode: 0o600 })

    // The CLI has read the crash's lock (and will judge it a crash's) ...
    const cli = await stopped('claude-code', { op: 'openSync', path: lock }, noLinks || undefined)
    // ... as the app takes it over and goes on, to its first backup, holding it.
    const app = await stopped('codex', { op: 'mkdirSync', path: join(dataDir, BACKUP_DIR), under: true }, noLinks || undefined)
    cli.proc.kill('SIGCONT')
    const cliRan = await cli.exited
    app.proc.kill('SIGCONT')
    const appRan = await app.exited
    expect(appRan).toMatchObject({ code: 0 })
    // Refused: the app holds the lock.
    expect(cliRan.code, cliRan.stderr).toBe(1)
    expect(cliRan.stderr).toContain(`Another Burnrate (pid ${app.proc.pid})`)

    // Every file pointed at Burnrate has its record: Disconnect puts both back as they were.
    const conn = new AgentConnections({ home, env: ENV, platform: 'linux', dataDir })
    expect(conn.connected().map((c) => c.agent)).toEqual(['codex'])
    expect(readFileSync(claude, 'utf8')).toBe(CLAUDE)
    conn.disconnect('codex')
    expect(readFileSync(codex, 'utf8')).toBe(CODEX)
  })
})
