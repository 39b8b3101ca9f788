import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { execCli } from '../support/cli'
import { ROOT } from '../e2e/browser'

/**
 * `burnrate serve --data-dir "$DIR"` with the variable unset: an empty --data-dir served with its
 * ledger made in the current folder (whatever folder the service manager or shell started in), and
 * an empty --config was not the file asked for either. Each is bad usage, exit 2, with one line
 * naming the flag, before anything is made or served. The built CLI, in its own process.
 */
const CLI = join(ROOT, 'out/main/cli.js')
const cwd = mkdtempSync(join(tmpdir(), 'burnrate-serve-empty-'))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))

function cli(args: string[]): ReturnType<typeof execCli> {
  // A server that starts is stopped after 10 s (the old behaviour): the test then fails on its code.
  return execCli(CLI, args, { cwd, timeout: 10_000, env: { ...process.env, HOME: cwd, BURNRATE_DATA_DIR: '', BURNRATE_CONFIG: '', BURNRATE_PORT: '' } })
}

describe('burnrate serve with an empty path', () => {
  it.each([
    [['serve', '--data-dir', '', '--port', '0'], '--data-dir'],
    [['--data-dir', '', '--port', '0'], '--data-dir'],
    [['serve', '--config', '', '--data-dir', join(cwd, 'data'), '--port', '0'], '--config'],
  ])('%j exits 2 naming the flag, and makes nothing', async (args, flag) => {
    const r = await cli(args)
    expect(r.code, r.stderr).toBe(2)
    expect(r.stderr).toMatch(new RegExp(`^burnrate: ${flag}: `))
    expect(r.stderr.trim().split('\n')).toHaveLength(1)
    expect(readdirSync(cwd)).toEqual([])
  }, 20_000)
})
