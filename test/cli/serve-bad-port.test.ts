import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { execCli } from '../support/cli'
import { ROOT } from '../e2e/browser'

/**
 * `burnrate serve --port abc`: a bad value on the command line is bad usage, exit code 2 (the
 * README's exit codes, and what `report --since yesterday` or `serve --bogus` exit with). It
 * exited 1, the code of a failure (a config file that is refused, a port already taken), so a
 * script or service manager could not tell a typo in its command line from a server that could
 * not start. The built CLI, in its own process, with no stdin.
 */
const CLI = join(ROOT, 'out/main/cli.js')
const dir = mkdtempSync(join(tmpdir(), 'burnrate-serve-port-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function cli(args: string[]): ReturnType<typeof execCli> {
  return execCli(CLI, args, { env: { ...process.env, HOME: dir, NO_COLOR: '1', BURNRATE_PORT: '' }, closeStdin: true })
}

describe('burnrate serve with a --port that is not a port', () => {
  it.each([
    [['serve', '--port', 'abc'], 'abc'],
    [['--port', '70000'], '70000'],
    [['serve', '--port', '80.5'], '80.5'],
  ])('%j exits 2 with one line naming --port, and serves nothing', async (args, value) => {
    const data = mkdtempSync(join(dir, 'data-'))
    const r = await cli([...args, '--data-dir', data])
    expect(r).toEqual({ code: 2, stdout: '', stderr: `burnrate: --port: expected a port number from 0 to 65535, got "${value}"\n` })
    expect(readdirSync(data)).toEqual([])
  })
})
