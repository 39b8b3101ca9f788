import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execCli } from '../support/cli'
import { ROOT } from '../e2e/browser'

/**
 * A data folder named on purpose that does not exist (a typo: `--data-dir /typo`,
 * BURNRATE_DATA_DIR, a config's `data_dir`): `status`, `report` and `export` made an empty
 * ledger there and reported $0.00 (exit 0), leaving the folder behind. Now bad usage, exit 2, one
 * line naming the folder, nothing made. The default folder on a fresh install is still made (the
 * report imports the agents' logs into it), and `import` still makes the ledger it writes.
 */
const CLI = join(ROOT, 'out/main/cli.js')
let home: string

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-typo-'))
})
afterAll(() => rmSync(home, { recursive: true, force: true }))

function cli(args: string[], extra: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = { ...process.env, NO_COLOR: '1', HOME: home, XDG_CONFIG_HOME: join(home, '.config'), BURNRATE_DATA_DIR: '', BURNRATE_CONFIG: '', BURNRATE_DATABASE_URL: '', CLAUDE_CONFIG_DIR: '', CODEX_HOME: '', BURNRATE_PORT: '1', ...extra }
  return execCli(CLI, args, { cwd: home, env })
}

const commands = [['status'], ['report', 'daily'], ['export'], ['export', '-o', 'out.csv']]

describe('a data folder named that does not exist', () => {
  it.each(commands)('%s --data-dir <typo> is refused, exit 2, and makes no folder', async (...cmd) => {
    const typo = join(home, 'typo-flag')
    const r = await cli([...cmd, '--data-dir', typo])
    expect(r.code, r.stdout + r.stderr).toBe(2)
    expect(r.stdout).toBe('')
    expect(r.stderr.trim().split('\n')).toHaveLength(1)
    expect(r.stderr).toContain(typo)
    expect(r.stderr).toContain('--data-dir')
    expect(existsSync(typo)).toBe(false)
    expect(existsSync(join(home, 'out.csv'))).toBe(false)
  })

  it.each(commands)('%s with BURNRATE_DATA_DIR=<typo> is refused the same way', async (...cmd) => {
    const typo = join(home, 'typo-env')
    const r = await cli(cmd, { BURNRATE_DATA_DIR: typo })
    expect(r.code, r.stdout + r.stderr).toBe(2)
    expect(r.stderr).toContain(typo)
    expect(r.stderr).toContain('BURNRATE_DATA_DIR')
    expect(existsSync(typo)).toBe(false)
  })

  it("a config's data_dir naming a missing folder is refused the same way", async () => {
    const cfg = join(home, 'typo.yaml')
    const typo = join(home, 'typo-config')
    writeFileSync(cfg, `data_dir: ${typo}\n`)
    const r = await cli(['report', 'daily', '--config', cfg])
    expect(r.code, r.stdout + r.stderr).toBe(2)
    expect(r.stderr).toContain(typo)
    expect(r.stderr).toContain(cfg)
    expect(existsSync(typo)).toBe(false)
  })

  it('an existing folder named, holding a ledger, is read as before', async () => {
    const there = join(home, 'there')
    mkdirSync(there)
    // A folder with no ledger is refused too (test/cli/data-dir-no-ledger.test.ts): import starts one.
    expect((await cli(['import', 'codex', '--data-dir', there])).code).toBe(0)
    const r = await cli(['status', '--json', '--no-import', '--data-dir', there])
    expect(r.code, r.stderr).toBe(0)
  })

  it('with storage.url the calls are in PostgreSQL: not refused for the folder', async () => {
    const typo = join(home, 'typo-pg')
    const r = await cli(['status', '--no-import', '--data-dir', typo], { BURNRATE_DATABASE_URL: 'postgres://u:p@127.0.0.1:1/burnrate' })
    expect(r.stderr).not.toContain('no data folder')
    expect(r.stderr).toContain('cannot reach the ledger')
  })

  it('import still makes the ledger it writes, and the default folder is still made on a fresh install', async () => {
    const fresh = join(home, 'fresh')
    const imp = await cli(['import', 'codex', '--data-dir', fresh])
    expect(imp.code, imp.stderr).toBe(0)
    expect(existsSync(join(fresh, 'burnrate.db'))).toBe(true)
    const r = await cli(['report', 'daily'])
    expect(r.code, r.stderr).toBe(0)
    expect(existsSync(join(home, '.config', 'Burnrate', 'burnrate.db'))).toBe(true)
  })
})
