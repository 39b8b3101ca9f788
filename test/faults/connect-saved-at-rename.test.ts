import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { build } from 'esbuild'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { AgentConnections } from '../../src/main/connect/connections'

/**
 * A connect checks that the agent's file still holds what it read before it replaces it
 * (./saved-meanwhile.test.ts), but it checked before writing its edit to a temporary file and
 * syncing that to the disk, which takes a while on a busy disk: the agent saving the file then
 * (Claude Code writing an "always allow" rule) had its save replaced by Burnrate's edit of the
 * older text. The connect here is stopped (SIGSTOP) once its temporary file is opened, and the
 * agent saves the file then.
 */
const ROOT = resolve(__dirname, '../..')
const URL = 'http://127.0.0.1:8787'
const ENV = { PATH: '' }
const BEFORE = '{\n  "model": "opus"\n}\n'
const SAVED = '{\n  "model": "opus",\n  "permissions": {\n    "allow": ["Bash(npm test)"]\n  }\n}\n'

let bundleDir: string
let child: string
beforeAll(async () => {
  bundleDir = mkdtempSync(join(tmpdir(), 'burnrate-saved-at-rename-'))
  child = join(bundleDir, 'connect-stop-at.mjs')
  await build({
    entryPoints: [join(ROOT, 'test/faults/scripts/connect-stop-at.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    outfile: child,
    logLevel: 'silent',
    mainFields: ['module', 'main'],
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  })
})
afterAll(() => rmSync(bundleDir, { recursive: true, force: true }))

let home: string
let proc: ChildProcess | null = null
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-saved-at-rename-home-'))
})
afterEach(() => {
  if (proc && proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL')
  proc = null
  rmSync(home, { recursive: true, force: true })
})

describe.skipIf(process.platform !== 'linux')('an agent saving its file while Burnrate writes its edit of it', () => {
  it('keeps what the agent saved: the connect is refused as a conflict, the file left as saved', async () => {
    const settings = join(home, '.claude', 'settings.json')
    mkdirSync(join(home, '.claude'))
    writeFileSync(settings, BEFORE)
    const dataDir = join(home, 'data')
    const stopAt = { op: 'openSync', path: `${settings}.burnrate-`, prefix: true }
    const p = spawn(process.execPath, [child, home, dataDir, 'claude-code', URL, JSON.stringify(stopAt), JSON.stringify(ENV)], { stdio: ['ignore', 'pipe', 'pipe'] })
    proc = p
    let stderr = ''
    p.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
    const exited = new Promise<number | null>((r) => p.once('exit', (code) => r(code)))
    await vi.waitFor(
      () => {
        if (p.exitCode !== null) throw new Error(`exited before stopping: ${stderr}`)
        expect(stderr).toContain('stopped')
        expect(readFileSync(`/proc/${p.pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0]).toBe('T')
      },
      { timeout: 60_000, interval: 20 },
    )
    // The agent saves its file as Burnrate's edit is being written beside it.
    writeFileSync(settings, SAVED)
    p.kill('SIGCONT')
    expect(await exited, stderr).toBe(1)
    expect(stderr).toContain('~/.claude/settings.json changed while Burnrate was writing it (the agent or an editor saved it just then)')
    expect(readFileSync(settings, 'utf8')).toBe(SAVED)
    expect(readdirSync(join(home, '.claude'))).toEqual(['settings.json'])
    const conn = new AgentConnections({ home, env: ENV, platform: 'linux', dataDir })
    expect(conn.connected()).toEqual([])
    const backups = join(dataDir, 'agent-backups', 'claude-code')
    expect(existsSync(backups) ? readdirSync(backups) : []).toEqual([])
  })
})
