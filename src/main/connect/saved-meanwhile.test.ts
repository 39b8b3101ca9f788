import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { AgentConnections, ConnectError } from './connections'

/**
 * A connect reads the agent's file, then saves its backups, copies and pending record (each synced
 * to the disk), and only then replaces the file with its edit of what it read. An agent saving the
 * file meanwhile (Claude Code writing an "always allow" rule into settings.json) had that save
 * replaced by Burnrate's edit of the older text: lost, with no trace in the backup either. The
 * save is made here at that moment, from Burnrate's clock (`now`), which it first reads there.
 */
const URL = 'http://127.0.0.1:8787'
const BEFORE = '{\n  "model": "opus"\n}\n'
const SAVED = '{\n  "model": "opus",\n  "permissions": {\n    "allow": ["Bash(npm test)"]\n  }\n}\n'

let home: string
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-saved-meanwhile-'))
  mkdirSync(join(home, '.claude'))
  writeFileSync(file(), BEFORE)
})
afterEach(() => {
  rmSync(home, { recursive: true, force: true })
})

const file = () => join(home, '.claude', 'settings.json')

describe('an agent saving its file while Burnrate connects it', () => {
  it('keeps what the agent saved: the connect is refused as a conflict, and connecting again then keeps it', () => {
    let saveNow = true
    const conn = new AgentConnections({
      home,
      env: { PATH: '' },
      platform: 'linux',
      dataDir: join(home, 'data'),
      now: () => {
        if (saveNow) {
          saveNow = false
          writeFileSync(file(), SAVED)
        }
        return new Date()
      },
    })
    let err: unknown = null
    try {
      conn.connect('claude-code', URL)
    } catch (e) {
      err = e
    }
    expect(readFileSync(file(), 'utf8')).toBe(SAVED)
    expect(err).toBeInstanceOf(ConnectError)
    expect((err as ConnectError).code).toBe('conflict')
    expect((err as ConnectError).message).toBe('~/.claude/settings.json changed while Burnrate was writing it (the agent or an editor saved it just then); Burnrate wrote nothing.')
    expect(conn.list().find((a) => a.agent === 'claude-code')!.connected).toBe(false)
    // No copy of the file left behind in the data folder.
    const backups = join(home, 'data', 'agent-backups', 'claude-code')
    expect(existsSync(backups) ? readdirSync(backups) : []).toEqual([])

    conn.connect('claude-code', URL)
    const connected = JSON.parse(readFileSync(file(), 'utf8'))
    expect(connected.permissions).toEqual({ allow: ['Bash(npm test)'] })
    expect(connected.env.ANTHROPIC_BASE_URL).toBe(URL)
    conn.disconnect('claude-code')
    expect(readFileSync(file(), 'utf8')).toBe(SAVED)
  })
})
