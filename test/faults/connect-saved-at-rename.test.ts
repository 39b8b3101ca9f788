import type { ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { AgentConnections } from '../../src/main/connect/connections'
import { bundledChild, connectStopped, killChildren } from './connect-child'

/**
 * A connect checks that the agent's file still holds what it read before it replaces it
 * (./saved-meanwhile.test.ts), but it checked before writing its edit to a temporary file and
 * syncing that to the disk, which takes a while on a busy disk: the agent saving the file then
 * (Claude Code writing an "always allow" rule) had its save replaced by Burnrate's edit of the
 * older text. The connect here is stopped (SIGSTOP) once its temporary file is opened, and the
 * agent saves the file then.
 */
const URL = 'http://127.0.0.1:8787'
const ENV = { PATH: '' }
const BEFORE = '{\n  "model": "opus"\n}\n'
const SAVED = '{\n  "model": "opus",\n  "permissions": {\n    "allow": ["Bash(npm test)"]\n  }\n}\n'

const child = bundledChild('connect-stop-at', 'burnrate-saved-at-rename-')

let home: string
const children: ChildProcess[] = []
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-saved-at-rename-home-'))
})
afterEach(() => {
  killChildren(children)
  rmSync(home, { recursive: true, force: true })
})

describe.skipIf(process.platform !== 'linux')('an agent saving its file while Burnrate writes its edit of it', () => {
  it('keeps what the agent saved: the connect is refused as a conflict, the file left as saved', async () => {
    const settings = join(home, '.claude', 'settings.json')
    mkdirSync(join(home, '.claude'))
    writeFileSync(settings, BEFORE)
    const dataDir = join(home, 'data')
    const stopAt = { op: 'openSync', path: `${settings}.burnrate-`, prefix: true }
    const { proc, exited } = await connectStopped(child(), [home, dataDir, 'claude-code', URL, JSON.stringify(stopAt), JSON.stringify(ENV)], children)
    // The agent saves its file as Burnrate's edit is being written beside it.
    writeFileSync(settings, SAVED)
    proc.kill('SIGCONT')
    const { code, stderr } = await exited
    expect(code, stderr).toBe(1)
    expect(stderr).toContain('~/.claude/settings.json changed while Burnrate was writing it (the agent or an editor saved it just then)')
    expect(readFileSync(settings, 'utf8')).toBe(SAVED)
    expect(readdirSync(join(home, '.claude'))).toEqual(['settings.json'])
    const conn = new AgentConnections({ home, env: ENV, platform: 'linux', dataDir })
    expect(conn.connected()).toEqual([])
    const backups = join(dataDir, 'agent-backups', 'claude-code')
    expect(existsSync(backups) ? readdirSync(backups) : []).toEqual([])
  })
})
