import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { CLI, ROOT } from '../load/harness'

/**
 * A data folder where hard links cannot be made (a FAT32 or exFAT drive, some network shares): the
 * locks are made in place there (connect/lock.ts, server/data-lock.ts), whatever code link() fails
 * with: EPERM on Linux, EISDIR on Windows (libuv's name for ERROR_INVALID_FUNCTION). The built CLI,
 * its link() failing as there (./no-links-preload.mjs).
 */

const PRELOAD = pathToFileURL(join(ROOT, 'test/faults/no-links-preload.mjs')).href
const URL = 'http://127.0.0.1:8791'
const CODEX = 'model = "o3"\n'

let home: string
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-no-links-'))
})
afterEach(() => rmSync(home, { recursive: true, force: true }))

function cli(code: string, ...args: string[]): { status: number | null; err: string } {
  const dataDir = join(home, 'data')
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: home,
    SHELL: '/bin/bash',
    BURNRATE_DATA_DIR: dataDir,
    BURNRATE_PORT: '8791',
    BURNRATE_CONFIG: '',
    BURNRATE_PRICE_AUTO_UPDATE: 'false',
    BURNRATE_TEST_LINK_ERROR: code,
    BURNRATE_TEST_LINK_DIR: dataDir,
  }
  for (const k of ['CODEX_HOME', 'CLAUDE_CONFIG_DIR', 'XDG_CONFIG_HOME', 'GEMINI_CLI_HOME', 'ZDOTDIR', 'BURNRATE_HOST', 'BURNRATE_DATABASE_URL']) delete env[k]
  const r = spawnSync(process.execPath, ['--import', PRELOAD, CLI, ...args], { cwd: ROOT, env, encoding: 'utf8' })
  return { status: r.status, err: r.stderr }
}

describe.each([
  ['EPERM', 'Linux'],
  ['EISDIR', 'Windows'],
])('a data folder without hard links (link fails with %s, as on %s)', (code) => {
  it('connect and disconnect take their lock, made in place, and leave none behind', () => {
    mkdirSync(join(home, '.codex'))
    writeFileSync(join(home, '.codex', 'config.toml'), CODEX)
    const connected = cli(code, 'connect', 'codex')
    expect(connected, connected.err).toMatchObject({ status: 0 })
    expect(readFileSync(join(home, '.codex', 'config.toml'), 'utf8')).toContain(`openai_base_url = "${URL}/v1"`)
    const disconnected = cli(code, 'disconnect', 'codex')
    expect(disconnected, disconnected.err).toMatchObject({ status: 0 })
    expect(readFileSync(join(home, '.codex', 'config.toml'), 'utf8')).toBe(CODEX)
    const data = join(home, 'data')
    expect(existsSync(data) ? readdirSync(data).filter((n) => n.startsWith('agent-connections.lock')) : []).toEqual([])
  })
})
