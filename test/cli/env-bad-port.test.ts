import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { execCli } from '../support/cli'
import { ROOT } from '../e2e/browser'

/**
 * `BURNRATE_PORT=abc burnrate serve` (or any command that reads the port: status, report, export,
 * import, connect) exited 1, the code of a failure (a config refused, a port taken), where a bad
 * `--port` is bad usage, 2. A bad value from the environment is bad usage too: exit 2, one line
 * naming the variable and its value, before the data folder is touched. The built CLI, in its own
 * process, with no stdin.
 */
const CLI = join(ROOT, 'out/main/cli.js')
const dir = mkdtempSync(join(tmpdir(), 'burnrate-env-port-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function cli(args: string[], port: string): ReturnType<typeof execCli> {
  const env = { ...process.env, HOME: dir, XDG_CONFIG_HOME: join(dir, '.config'), NO_COLOR: '1', BURNRATE_PORT: port, BURNRATE_CONFIG: '', BURNRATE_DATA_DIR: '', BURNRATE_DATABASE_URL: '' }
  return execCli(CLI, args, { cwd: dir, env, closeStdin: true, timeout: 30_000 })
}

describe('a BURNRATE_PORT that is not a port', () => {
  it.each([
    [[], 'abc'],
    [['serve'], '70000'],
    [['--host', '127.0.0.1'], '80.5'],
    [['status'], 'abc'],
    [['report', 'daily'], 'abc'],
    [['export'], 'abc'],
    [['import', 'codex'], 'abc'],
    [['connect'], 'abc'],
    [['connect', 'codex', '--dry-run'], 'abc'],
  ])('%j exits 2 with one line naming BURNRATE_PORT, and makes nothing', async (args, value) => {
    const data = mkdtempSync(join(dir, 'data-'))
    const r = await cli([...args, '--data-dir', data], value)
    expect(r).toEqual({ code: 2, stdout: '', stderr: `burnrate: BURNRATE_PORT: expected a port number from 0 to 65535, got "${value}"\n` })
    expect(readdirSync(data)).toEqual([])
  })

  it('--port wins over it, as flags win over the environment', async () => {
    const data = mkdtempSync(join(dir, 'data-'))
    const r = await cli(['serve', '--port', 'x', '--data-dir', data], 'abc')
    expect(r).toEqual({ code: 2, stdout: '', stderr: 'burnrate: --port: expected a port number from 0 to 65535, got "x"\n' })
  })
})
