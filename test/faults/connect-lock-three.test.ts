import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { AgentConnections } from '../../src/main/connect/connections'
import { LOCK_FILE } from '../../src/main/connect/lock'
import { BACKUP_DIR } from '../../src/main/connect/state'
import { stoppedAgain } from './connect-child'
import { CLAUDE, CODEX, ENV, lockConnects } from './connect-lock-support'

/**
 * Three Burnrates and the lock a crashed one left (./connect-lock-takeover.test.ts has two): A
 * takes it over and holds it; B, which read the crash's lock before, moves A's aside to judge it
 * and puts it back; C, coming while the name is free, makes its lock there. Builds before this one
 * let C go on beside A (B's put-back found C's lock and gave A's up), both changing the agents'
 * files at once. Each process is stopped at a file operation (SIGSTOP), so the order is set, not timed.
 */
const { dirs, stopped } = lockConnects('burnrate-lock-three-')

describe.skipIf(process.platform !== 'linux')('a lock left by a crash, found by three Burnrates at once', () => {
  it.each([
    ['', 'links'],
    ['EPERM', 'no hard links (a FAT drive on Linux)'],
    ['EISDIR', 'no hard links (a FAT drive on Windows)'],
  ])('one holds it: the one that made its lock while another judged the holder\'s is refused, and no record is lost (%s: %s)', async (noLinks) => {
    const { home, dataDir } = dirs()
    const claude = join(home, '.claude', 'settings.json')
    const codex = join(home, '.codex', 'config.toml')
    mkdirSync(join(home, '.claude'))
    mkdirSync(join(home, '.codex'))
    mkdirSync(join(home, '.gemini'))
    writeFileSync(claude, CLAUDE)
    writeFileSync(codex, CODEX)
    mkdirSync(dataDir, { mode: 0o700 })
    // A Burnrate that crashed holding the lock: its process is gone.
    const lock = join(dataDir, LOCK_FILE)
    writeFileSync(lock, JSON.stringify({ pid: spawnSync(process.execPath, ['-e', '']).pid! }), { mode: 0o600 })

    // B has read the crash's lock (and will judge it a crash's) ...
    const b = await stopped('claude-code', [{ op: 'openSync', path: lock }, { op: 'renameSync', path: lock }], noLinks)
    // ... as A takes it over and goes on, to its first backup, holding it.
    const a = await stopped('codex', { op: 'mkdirSync', path: join(dataDir, BACKUP_DIR), under: true }, noLinks)
    // B moves what is under the name now, A's lock, aside to judge it.
    b.proc.kill('SIGCONT')
    expect(await stoppedAgain(b, 2)).toBe('stopped')
    expect(existsSync(lock)).toBe(false)
    // C comes while the name is free, and makes its lock (linked, or where links cannot be made, created in place).
    const c = await stopped('gemini-cli', noLinks ? { op: 'openSync', path: lock } : { op: 'linkSync', path: `${lock}.`, prefix: true }, noLinks)
    expect(existsSync(lock)).toBe(true)
    // B finds A's lock is a live one and puts it back.
    b.proc.kill('SIGCONT')
    const bRan = await b.exited
    c.proc.kill('SIGCONT')
    const cRan = await c.exited
    a.proc.kill('SIGCONT')
    const aRan = await a.exited

    expect(aRan).toMatchObject({ code: 0 })
    // Both refused: A holds the lock.
    expect(bRan.code, bRan.stderr).toBe(1)
    expect(bRan.stderr).toContain(`Another Burnrate (pid ${a.proc.pid})`)
    expect(cRan.code, cRan.stderr).toBe(1)
    expect(cRan.stderr).toContain(`Another Burnrate (pid ${a.proc.pid})`)

    // Every file pointed at Burnrate has its record: Disconnect puts it back as it was.
    const conn = new AgentConnections({ home, env: ENV, platform: 'linux', dataDir })
    expect(conn.connected().map((x) => x.agent)).toEqual(['codex'])
    expect(readFileSync(claude, 'utf8')).toBe(CLAUDE)
    expect(existsSync(join(home, '.gemini', '.env'))).toBe(false)
    conn.disconnect('codex')
    expect(readFileSync(codex, 'utf8')).toBe(CODEX)
  })

  it.each([
    ['', 'links'],
    ['EPERM', 'no hard links (a FAT drive on Linux)'],
  ])('one holds it when the one judging the holder\'s lock is killed with it moved aside (%s: %s)', async (noLinks) => {
    const { home, dataDir } = dirs()
    mkdirSync(join(home, '.codex'))
    mkdirSync(join(home, '.gemini'))
    writeFileSync(join(home, '.codex', 'config.toml'), CODEX)
    mkdirSync(dataDir, { mode: 0o700 })
    const lock = join(dataDir, LOCK_FILE)
    writeFileSync(lock, JSON.stringify({ pid: spawnSync(process.execPath, ['-e', '']).pid! }), { mode: 0o600 })

    const b = await stopped('claude-code', [{ op: 'openSync', path: lock }, { op: 'renameSync', path: lock }], noLinks)
    const a = await stopped('codex', { op: 'mkdirSync', path: join(dataDir, BACKUP_DIR), under: true }, noLinks)
    // B moves A's lock aside, and is killed there (a crash, the OOM killer) before it puts it back.
    b.proc.kill('SIGCONT')
    expect(await stoppedAgain(b, 2)).toBe('stopped')
    expect(existsSync(lock)).toBe(false)
    b.proc.kill('SIGKILL')
    await b.exited
    // C comes while the name is free: A's lock is put back, and C is refused.
    const c = await stopped('gemini-cli', { op: 'openSync', path: lock }, noLinks)
    c.proc.kill('SIGCONT')
    const cRan = await c.exited
    expect(cRan.code, cRan.stderr).toBe(1)
    expect(cRan.stderr).toContain(`Another Burnrate (pid ${a.proc.pid})`)
    expect(existsSync(join(home, '.gemini', '.env'))).toBe(false)
    a.proc.kill('SIGCONT')
    expect(await a.exited).toMatchObject({ code: 0 })
  })
})
