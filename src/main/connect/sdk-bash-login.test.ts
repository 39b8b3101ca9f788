import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { AgentConnections } from './connections'

/**
 * On macOS, Terminal starts bash as a login shell, which reads the first of ~/.bash_profile,
 * ~/.bash_login and ~/.profile that exists, and only that one. Burnrate made a ~/.bash_profile
 * for the SDK scripts' block when the user kept their settings in ~/.profile: every new terminal
 * then read Burnrate's two lines and no longer the user's ~/.profile (their PATH gone) until
 * Disconnect. A real bash, as a login shell in the test's home, says what it reads.
 */
const URL = 'http://127.0.0.1:8787'
const BASH = ['/bin/bash', '/usr/bin/bash'].find((p) => existsSync(p))

let home: string
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-sdk-bash-'))
})
afterEach(() => {
  rmSync(home, { recursive: true, force: true })
})

const connections = () => new AgentConnections({ home, env: { PATH: '', SHELL: '/bin/bash' }, platform: 'darwin', dataDir: join(home, 'data') })

/** What a new terminal's login bash has for these variables. */
function loginShell(): { mine: string; openai: string } {
  const out = execFileSync(BASH!, ['-l', '-c', 'printf "%s|%s" "$MINE" "$OPENAI_BASE_URL"'], { env: { HOME: home, PATH: '/usr/bin:/bin' }, encoding: 'utf8' })
  const [mine, openai] = out.split('|')
  return { mine, openai }
}

describe.skipIf(!BASH)('SDK scripts for bash on macOS', () => {
  it.each(['.profile', '.bash_login'])("with the user's settings in ~/%s only: the block goes there, and a login shell reads both", (name) => {
    const PROFILE = '# mine\nexport MINE=kept\n'
    writeFileSync(join(home, name), PROFILE)
    expect(loginShell()).toEqual({ mine: 'kept', openai: '' })

    connections().connect('sdk', URL)
    expect(loginShell()).toEqual({ mine: 'kept', openai: `${URL}/v1` })
    expect(existsSync(join(home, '.bash_profile'))).toBe(false)

    connections().disconnect('sdk')
    expect(readFileSync(join(home, name), 'utf8')).toBe(PROFILE)
    expect(loginShell()).toEqual({ mine: 'kept', openai: '' })
  })

  it('with a ~/.bash_profile, or none of them: ~/.bash_profile, as before', () => {
    connections().connect('sdk', URL)
    expect(readFileSync(join(home, '.bash_profile'), 'utf8')).toContain(`export OPENAI_BASE_URL=${URL}/v1`)
    expect(loginShell().openai).toBe(`${URL}/v1`)
    connections().disconnect('sdk')
    expect(existsSync(join(home, '.bash_profile'))).toBe(false)

    writeFileSync(join(home, '.bash_profile'), 'export MINE=kept\n')
    writeFileSync(join(home, '.profile'), 'export MINE=not-read\n')
    connections().connect('sdk', URL)
    expect(readFileSync(join(home, '.profile'), 'utf8')).toBe('export MINE=not-read\n')
    expect(loginShell()).toEqual({ mine: 'kept', openai: `${URL}/v1` })
  })
})
