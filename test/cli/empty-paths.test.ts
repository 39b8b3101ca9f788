import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execCli } from '../support/cli'
import { ROOT } from '../e2e/browser'
import { makeCall } from '../dashboard/seed'
import { type TestServer, startTestServer } from '../support/server'

/**
 * An empty path on the command line, as `"$VAR"` with the variable unset gives: `export -o ''`
 * wrote the export to stdout (the terminal, or whatever a script took for the file's log) and
 * exited 0; `--data-dir ''` opened, and made, a ledger `burnrate.db` in the current folder and
 * reported its nothing ('$0.00 in 0 calls') with exit 0; `--config ''` read the default config;
 * `import --path ''` was refused as "no such folder: " (exit 1), naming nothing. Each is now bad usage (exit 2) with one line naming the option, before anything is read or made.
 */
const CLI = join(ROOT, 'out/main/cli.js')
let t: TestServer
let cwd: string

beforeAll(async () => {
  t = await startTestServer({ timezone: 'UTC' })
  t.server.ledger.record(makeCall({ ts: Date.now() - 60_000, cost_usd: 1 }))
  await t.server.ledger.flushed()
  await t.stop()
  cwd = mkdtempSync(join(tmpdir(), 'burnrate-cwd-'))
})
afterAll(async () => {
  await t.cleanup()
  rmSync(cwd, { recursive: true, force: true })
})

function cli(args: string[]): ReturnType<typeof execCli> {
  return execCli(CLI, [...args], { cwd, env: { ...process.env, NO_COLOR: '1', HOME: cwd, BURNRATE_DATA_DIR: '', BURNRATE_CONFIG: '' } })
}

describe('an empty path given to an option', () => {
  it("export -o '' is bad usage, not the export on stdout", async () => {
    const r = await cli(['export', '--data-dir', t.dir, '--config', t.configFile, '-o', ''])
    expect(r.stdout).toBe('')
    expect(r.code, r.stderr).toBe(2)
    expect(r.stderr).toContain('--output')
  })

  it.each([['status'], ['report', 'daily'], ['export'], ['import', 'codex']])("%s --data-dir '' is bad usage, and makes no ledger in the current folder", async (...cmd) => {
    const r = await cli([...cmd, '--data-dir', '', '--no-import'].filter((a) => a !== '--no-import' || cmd[0] !== 'export' && cmd[0] !== 'import'))
    expect(r.code, r.stdout + r.stderr).toBe(2)
    expect(r.stderr).toContain('--data-dir')
    expect(existsSync(join(cwd, 'burnrate.db')), readdirSync(cwd).join(' ')).toBe(false)
  })

  it("import --path '' is bad usage, not 'no such folder: ' naming nothing", async () => {
    const r = await cli(['import', 'codex', '--data-dir', t.dir, '--path', ''])
    expect(r.code, r.stdout + r.stderr).toBe(2)
    expect(r.stderr).toContain("option '--path <dir...>' argument '' is invalid. give a path")
  })

  it("--config '' is bad usage, not the default config", async () => {
    const r = await cli(['report', 'daily', '--data-dir', t.dir, '--config', ''])
    expect(r.code, r.stdout + r.stderr).toBe(2)
    expect(r.stderr).toContain('--config')
  })
})
