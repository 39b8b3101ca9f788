import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execCli, startLedger } from '../support/cli'
import { ROOT } from '../e2e/browser'
import { COMMANDS } from '../../src/main/cli/commands'
import { COMMAND_NAMES } from '../../src/main/cli/serve-args'
import { Command } from 'commander'

/**
 * Options before the command (`burnrate --json status`, `burnrate --data-dir d report daily`):
 * a command line that starts with an option served, so the server's flag parser said `Unknown
 * option '--json'` or `Unexpected argument 'status'` with the server's usage, though the command
 * takes them. They are now the command's options, wherever they stand: the same output as with
 * them after it. One the command does not take is named as unknown. The built CLI, in its own
 * process.
 */
const CLI = join(ROOT, 'out/main/cli.js')
let home: string
let data: string

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-options-first-'))
  data = startLedger(join(home, 'data'))
  mkdirSync(join(home, 'logs'))
})
afterAll(() => rmSync(home, { recursive: true, force: true }))

function cli(args: string[]): ReturnType<typeof execCli> {
  const env = { ...process.env, NO_COLOR: '1', HOME: home, XDG_CONFIG_HOME: join(home, '.config'), BURNRATE_DATA_DIR: '', BURNRATE_CONFIG: '', BURNRATE_DATABASE_URL: '', BURNRATE_PORT: '' }
  return execCli(CLI, args, { cwd: home, env, closeStdin: true, timeout: 30_000 })
}

describe('options before the command', () => {
  it.each([
    [['--json', 'status', '--no-import', '--data-dir'], ['status', '--json', '--no-import', '--data-dir']],
    [['--data-dir', '@', '--local', 'report', 'daily', '--json', '--no-import'], ['report', 'daily', '--json', '--no-import', '--local', '--data-dir', '@']],
    [['--tenant', 'status', '--data-dir', '@', 'report', 'model', '--json', '--no-import'], ['report', 'model', '--tenant', 'status', '--json', '--no-import', '--data-dir', '@']],
    [['--format', 'json', 'export', '--data-dir', '@'], ['export', '--format', 'json', '--data-dir', '@']],
    [['--json', '--data-dir', '@', 'import', 'codex', '--path', '#'], ['import', 'codex', '--path', '#', '--json', '--data-dir', '@']],
    // A variadic option's values, all of them (only its first was skipped: "unknown option '--path'").
    [['--path', '#', '#', 'import', 'codex', '--json', '--data-dir', '@'], ['import', 'codex', '--path', '#', '#', '--json', '--data-dir', '@']],
  ])('%j runs as %j', async (before, after) => {
    const fill = (args: string[]) => args.map((a) => (a === '@' ? data : a === '#' ? join(home, 'logs') : a)).concat(args.at(-1) === '--data-dir' ? [data] : [])
    const a = await cli(fill(before))
    const b = await cli(fill(after))
    expect(b.code, b.stderr).toBe(0)
    expect(a.code, a.stderr).toBe(0)
    expect(a.stderr).toBe(b.stderr)
    expect(JSON.parse(a.stdout)).toEqual(JSON.parse(b.stdout))
  })

  it('server flags before serve still serve (a bad --port is its bad usage, exit 2)', async () => {
    const r = await cli(['--port', 'abc', 'serve', '--data-dir', data])
    expect(r).toEqual({ code: 2, stdout: '', stderr: 'burnrate: --port: expected a port number from 0 to 65535, got "abc"\n' })
    const help = await cli(['--port', '0', 'serve', '--help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('Usage: burnrate serve')
  })

  it("an option the command does not take is named as unknown, not 'Unexpected argument'", async () => {
    const r = await cli(['--port', '80', 'status', '--data-dir', data])
    expect(r.code).toBe(2)
    expect(r.stdout).toBe('')
    expect(r.stderr).toContain("unknown option '--port'")
    expect(r.stderr).not.toContain('Unexpected argument')
  })

  it('the command names the serve path knows without loading the program are the program\'s', () => {
    const program = new Command('burnrate')
    for (const register of COMMANDS) register(program, { stdout: process.stdout, stderr: process.stderr, env: {} })
    expect([...COMMAND_NAMES].sort()).toEqual([...program.commands.map((c) => c.name()), 'help'].sort())
  })
})
