import { execFileSync } from 'node:child_process'
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { execCli } from '../support/cli'

/**
 * A secrets manager can mount an agent's env file as a named pipe (1Password's .env files: the
 * secrets are written into it when something reads it). Burnrate reads the agents' files on its
 * main thread, and a read of a pipe nothing writes into waits for good: `burnrate connect` never
 * ended, and the app's tray menu and the dashboard's agent list (GET /api/admin/agents) stopped
 * the process the proxy runs in, every agent's calls with it. Such a file is now refused as one
 * Burnrate cannot read, without waiting on it.
 */

const ROOT = resolve(__dirname, '../..')
const CLI = join(ROOT, 'out/main/cli.js')
const CLAUDE = '{\n  "model": "opus"\n}\n'

let home: string
beforeAll(() => {
  if (!existsSync(CLI)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
})
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-connect-pipe-'))
  mkdirSync(join(home, '.gemini'))
  execFileSync('mkfifo', [join(home, '.gemini', '.env')])
  mkdirSync(join(home, '.claude'))
  writeFileSync(join(home, '.claude', 'settings.json'), CLAUDE)
})
afterEach(() => {
  rmSync(home, { recursive: true, force: true })
})

function cli(...args: string[]) {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, SHELL: '/bin/bash', BURNRATE_DATA_DIR: join(home, 'data'), BURNRATE_PORT: '8791', BURNRATE_CONFIG: '' }
  for (const k of ['CODEX_HOME', 'CLAUDE_CONFIG_DIR', 'XDG_CONFIG_HOME', 'GEMINI_CLI_HOME', 'ZDOTDIR', 'BURNRATE_HOST', 'BURNRATE_DATABASE_URL']) delete env[k]
  return execCli(CLI, args, { env })
}

describe.skipIf(process.platform === 'win32')("an agent's env file that is a named pipe", () => {
  it('is said in the agent list, and the other agents are listed and connected as usual', async () => {
    const list = await cli('connect')
    expect(list.code).toBe(0)
    expect(list.stdout).toMatch(/^gemini-cli\s+installed, not connected — Cannot read ~\/\.gemini\/\.env \(it is not a regular file: a named pipe or a device is not read\); Burnrate wrote nothing\.$/m)
    expect(list.stdout).toMatch(/^claude-code\s+installed, not connected$/m)

    const claude = await cli('connect', 'claude-code')
    expect(claude.code).toBe(0)
    expect(readFileSync(join(home, '.claude', 'settings.json'), 'utf8')).toContain('"ANTHROPIC_BASE_URL": "http://127.0.0.1:8791"')
    expect((await cli('connect')).stdout).toMatch(/^claude-code\s+connected to http:\/\/127\.0\.0\.1:8791$/m)
  })

  it('connecting that agent is refused, with the pipe left as it was', async () => {
    const r = await cli('connect', 'gemini-cli')
    expect(r.code).toBe(1)
    expect(r.stderr).toContain('Cannot read ~/.gemini/.env (it is not a regular file')
    expect(lstatSync(join(home, '.gemini', '.env')).isFIFO()).toBe(true)
    expect((await cli('connect')).stdout).toMatch(/^gemini-cli\s+installed, not connected/m)
  })
})
