import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { AgentConnections } from './connections'

/**
 * zsh reads ~/.zshenv first, then its other files from $ZDOTDIR (the home folder when unset). A
 * ~/.zshenv that sets ZDOTDIR (`export ZDOTDIR="$HOME/.config/zsh"`, to keep the home folder
 * tidy) moves .zshrc there. The app, started from the Dock or a menu, has no shell's variables:
 * it wrote ~/.zshrc, which no terminal reads, and showed SDK scripts connected with nothing said.
 */
const URL = 'http://127.0.0.1:8787'

let home: string
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-sdk-zdotdir-'))
  mkdirSync(join(home, '.config', 'zsh'), { recursive: true })
  writeFileSync(join(home, '.config', 'zsh', '.zshrc'), 'export MINE=kept\n')
})
afterEach(() => {
  rmSync(home, { recursive: true, force: true })
})

const connections = (env: NodeJS.ProcessEnv = {}) => new AgentConnections({ home, env: { PATH: '', SHELL: '/bin/zsh', ...env }, platform: 'darwin', dataDir: join(home, 'data') })
const warningsOf = (conn: AgentConnections) => conn.list().find((a) => a.agent === 'sdk')!.warnings

describe('SDK scripts for zsh with ZDOTDIR set in ~/.zshenv', () => {
  it('connected where ZDOTDIR is not set (the app): the plan and the agent list say the terminals do not read that file', () => {
    writeFileSync(join(home, '.zshenv'), '# XDG\nexport ZDOTDIR="$HOME/.config/zsh"\n')
    const conn = connections()
    const plan = conn.connect('sdk', URL)
    const note =
      '~/.zshenv sets ZDOTDIR ($HOME/.config/zsh): zsh reads the .zshrc there, not ~/.zshrc, where Burnrate writes, so the variables are not set in your terminals. ' +
      'Connect from a terminal instead (burnrate connect sdk), where ZDOTDIR is set: Burnrate then writes them into that .zshrc.'
    expect(plan.notes).toContain(note)
    expect(warningsOf(conn)).toEqual([note])
    conn.disconnect('sdk')
    expect(existsSync(join(home, '.zshrc'))).toBe(false)

    // From a terminal, where zsh exported it: the .zshrc zsh reads, and nothing to say.
    const terminal = connections({ ZDOTDIR: join(home, '.config', 'zsh') })
    expect(terminal.connect('sdk', URL).notes.join('\n')).not.toContain('ZDOTDIR')
    expect(readFileSync(join(home, '.config', 'zsh', '.zshrc'), 'utf8')).toContain(`export OPENAI_BASE_URL=${URL}/v1`)
    expect(warningsOf(terminal)).toEqual([])
  })

  it('connected from a terminal, as the note says to: the app, without ZDOTDIR, does not say the terminals lack the variables', () => {
    writeFileSync(join(home, '.zshenv'), 'export ZDOTDIR=~/.config/zsh\n')
    connections({ ZDOTDIR: join(home, '.config', 'zsh') }).connect('sdk', URL)
    expect(readFileSync(join(home, '.config', 'zsh', '.zshrc'), 'utf8')).toContain(`export ANTHROPIC_BASE_URL=${URL}`)
    expect(warningsOf(connections()).join('\n')).not.toContain('ZDOTDIR')
    // Another Burnrate's address there, planned by one with no record of it (its own data folder): still said.
    const other = new AgentConnections({ home, env: { PATH: '', SHELL: '/bin/zsh' }, platform: 'darwin', dataDir: join(home, 'other-data') })
    expect(other.planConnect('sdk', 'http://127.0.0.1:9999').notes.join('\n')).toContain('~/.zshenv sets ZDOTDIR (~/.config/zsh)')
  })

  it('connected from a terminal, then re-pointed by the app (no ZDOTDIR): the .zshrc zsh reads is edited, not ~/.zshrc', () => {
    writeFileSync(join(home, '.zshenv'), 'export ZDOTDIR="$HOME/.config/zsh"\n')
    const zshrc = join(home, '.config', 'zsh', '.zshrc')
    connections({ ZDOTDIR: join(home, '.config', 'zsh') }).connect('sdk', URL)
    const app = connections()
    const sdk = app.list().find((a) => a.agent === 'sdk')!
    expect(sdk.settings.map((s) => s.file)).toEqual(['~/.config/zsh/.zshrc', '~/.config/zsh/.zshrc'])
    expect(sdk.changed_since).toBe(false)
    const plan = app.connect('sdk', 'http://127.0.0.1:9999')
    expect(plan.changes.map((c) => c.file)).toEqual(['~/.config/zsh/.zshrc'])
    expect(plan.notes.join('\n')).not.toContain('ZDOTDIR')
    expect(readFileSync(zshrc, 'utf8')).toContain('export ANTHROPIC_BASE_URL=http://127.0.0.1:9999')
    expect(existsSync(join(home, '.zshrc'))).toBe(false)
    expect(warningsOf(app)).toEqual([])
    app.disconnect('sdk')
    expect(readFileSync(zshrc, 'utf8')).toBe('export MINE=kept\n')
  })

  it('a ~/.zshenv that sets ZDOTDIR to the home folder, or none: nothing to say', () => {
    writeFileSync(join(home, '.zshenv'), 'ZDOTDIR=$HOME\n')
    expect(connections().connect('sdk', URL).notes.join('\n')).not.toContain('ZDOTDIR')
    connections().disconnect('sdk')
    rmSync(join(home, '.zshenv'))
    expect(connections().connect('sdk', URL).notes.join('\n')).not.toContain('ZDOTDIR')
  })
})
