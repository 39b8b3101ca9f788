import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execCli } from '../support/cli'
import { ROOT } from '../e2e/browser'

/**
 * A data folder named on purpose (`--data-dir /tmp`, BURNRATE_DATA_DIR, a config's `data_dir`)
 * that exists but holds no ledger (no burnrate.db: the wrong folder, a parent of the right one):
 * `status`, `report` and `export` made an empty ledger in it and reported $0.00 with exit 0,
 * leaving the file behind. As a named folder that does not exist, it is bad usage: exit 2, one
 * line naming the folder and what named it, nothing made in it. `import` still starts a ledger
 * there, after which the folder is read; the default folder on a fresh install is still made
 * (test/cli/data-dir-missing.test.ts).
 */
const CLI = join(ROOT, 'out/main/cli.js')
let home: string

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-no-ledger-'))
})
afterAll(() => rmSync(home, { recursive: true, force: true }))

function cli(args: string[], extra: NodeJS.ProcessEnv = {}): ReturnType<typeof execCli> {
  const env = { ...process.env, NO_COLOR: '1', HOME: home, XDG_CONFIG_HOME: join(home, '.config'), BURNRATE_DATA_DIR: '', BURNRATE_CONFIG: '', BURNRATE_DATABASE_URL: '', CLAUDE_CONFIG_DIR: '', CODEX_HOME: '', BURNRATE_PORT: '1', ...extra }
  return execCli(CLI, args, { cwd: home, env })
}

function folder(name: string): string {
  const dir = join(home, name)
  mkdirSync(dir)
  return dir
}

const commands = [['status'], ['report', 'daily'], ['export'], ['export', '-o', 'out.csv']]

describe('a data folder named that exists but holds no ledger', () => {
  it.each(commands)('%s --data-dir <folder without a ledger> is refused, exit 2, and makes nothing in it', async (...cmd) => {
    const dir = folder(`flag-${cmd.join('-')}`)
    const r = await cli([...cmd, '--data-dir', dir])
    expect(r.code, r.stdout + r.stderr).toBe(2)
    expect(r.stdout).toBe('')
    expect(r.stderr.trim().split('\n')).toHaveLength(1)
    expect(r.stderr).toContain(`no ledger in ${dir}`)
    expect(r.stderr).toContain('--data-dir')
    expect(readdirSync(dir)).toEqual([])
    expect(existsSync(join(home, 'out.csv'))).toBe(false)
  })

  it('BURNRATE_DATA_DIR naming one is refused the same way', async () => {
    const dir = folder('env')
    const r = await cli(['report', 'daily'], { BURNRATE_DATA_DIR: dir })
    expect(r.code, r.stdout + r.stderr).toBe(2)
    expect(r.stderr).toContain(`no ledger in ${dir}`)
    expect(r.stderr).toContain('BURNRATE_DATA_DIR')
    expect(readdirSync(dir)).toEqual([])
  })

  it("a config's data_dir naming one is refused the same way", async () => {
    const dir = folder('cfg')
    const cfg = join(home, 'cfg.yaml')
    writeFileSync(cfg, `data_dir: ${dir}\n`)
    const r = await cli(['status', '--config', cfg])
    expect(r.code, r.stdout + r.stderr).toBe(2)
    expect(r.stderr).toContain(`no ledger in ${dir}`)
    expect(r.stderr).toContain(cfg)
    expect(readdirSync(dir)).toEqual([])
  })

  it('import starts a ledger there, and the folder is read from then on', async () => {
    const dir = folder('started')
    const imp = await cli(['import', 'codex', '--data-dir', dir])
    expect(imp.code, imp.stderr).toBe(0)
    expect(existsSync(join(dir, 'burnrate.db'))).toBe(true)
    const r = await cli(['status', '--json', '--no-import', '--data-dir', dir])
    expect(r.code, r.stderr).toBe(0)
    expect(JSON.parse(r.stdout).ledger.calls).toBe(0)
  })
})
