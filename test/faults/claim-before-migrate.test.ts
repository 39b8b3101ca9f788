import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { MIGRATIONS } from '../../src/main/ledger/migrations'
import { listeningUrl } from '../support/child'

/**
 * A newer Burnrate (the CLI's server, the desktop app, a `--local` reader, `import`) started on a
 * data folder an older headless server serves: it must not upgrade the database under that
 * server, which then ran on a schema it does not know. The server claims the folder before it
 * opens the database; the CLI's readers and `import` do not upgrade a folder another Burnrate holds.
 */

const ROOT = resolve(__dirname, '../..')
const CLI = join(ROOT, 'out/main/cli.js')
const LATEST = MIGRATIONS.at(-1)!.version
const env = { ...process.env, BURNRATE_PRICE_AUTO_UPDATE: 'false', BURNRATE_CONFIG: '', BURNRATE_PORT: '', BURNRATE_DATA_DIR: '' }

let dir: string
let home: string
const children: ChildProcess[] = []
beforeAll(() => {
  if (!existsSync(CLI)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
})
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-claimfirst-'))
  home = join(dir, 'home')
  mkdirSync(home)
})
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})

const dbFile = () => join(dir, 'data', 'burnrate.db')
const lockFile = () => join(dir, 'data', 'server.lock')

/** The schema version the database records (read without upgrading it). */
function schemaVersion(): number {
  const db = new Database(dbFile(), { readonly: true })
  try {
    return db.pragma('user_version', { simple: true }) as number
  } finally {
    db.close()
  }
}

/** The database as an older Burnrate leaves it: one migration behind (the last one is idempotent, so the live server keeps working on it). */
function oneBehind(): void {
  const db = new Database(dbFile())
  try {
    db.pragma(`user_version = ${LATEST - 1}`)
  } finally {
    db.close()
  }
}

function run(args: string[]): { code: number | null; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { env: { ...env, HOME: home, XDG_DATA_HOME: join(home, '.local/share') }, encoding: 'utf8', timeout: 60_000 })
  return { code: r.status, stderr: r.stderr.trim() }
}

/** A server of the built CLI on the data folder, its database then set one schema behind (as an older Burnrate would have it). */
async function olderServer(): Promise<{ child: ChildProcess; url: string; args: string[]; data: string }> {
  const cfg = join(dir, 'cfg.yaml')
  writeFileSync(cfg, 'providers: {}\n')
  const data = join(dir, 'data')
  const args = ['--config', cfg, '--data-dir', data]
  const child = spawn(process.execPath, [CLI, ...args, '--port', '0'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  const url = await listeningUrl(child).url
  oneBehind()
  return { child, url, args, data }
}

describe('a newer Burnrate beside a running server whose database is a schema behind', () => {
  it('a second server refuses as before, and leaves the database as it was', async () => {
    const a = await olderServer()
    const b = run([...a.args, '--port', '0'])
    expect(b).toEqual({
      code: 1,
      stderr: `burnrate: another Burnrate (pid ${a.child.pid}) serves this data folder ${a.data} at ${a.url}; stop it or use another --data-dir (if no Burnrate runs, delete ${lockFile()})`,
    })
    expect(schemaVersion()).toBe(LATEST - 1)
    // The first still holds the folder and answers.
    expect((JSON.parse(readFileSync(lockFile(), 'utf8')) as { pid: number }).pid).toBe(a.child.pid)
    expect((await fetch(`${a.url}/api/health`)).status).toBe(200)
  })

  it('`report --local` and `import` refuse rather than upgrade it; once the server stops, they upgrade it', async () => {
    const a = await olderServer()
    const report = run(['report', 'daily', '--local', '--json', '--no-import', ...a.args])
    expect(report.code).toBe(1)
    expect(report.stderr).toContain(`another Burnrate (pid ${a.child.pid}) serves this data folder ${a.data}`)
    expect(schemaVersion()).toBe(LATEST - 1)
    const imported = run(['import', 'all', '--json', ...a.args])
    expect(imported.code).toBe(1)
    expect(imported.stderr).toContain(`another Burnrate (pid ${a.child.pid}) serves this data folder ${a.data}`)
    expect(schemaVersion()).toBe(LATEST - 1)

    await new Promise((r) => {
      a.child.once('exit', r)
      a.child.kill('SIGTERM')
    })
    // No Burnrate holds the folder now: a --local reader upgrades it, as before.
    const after = run(['report', 'daily', '--local', '--json', '--no-import', ...a.args])
    expect(after.code, after.stderr).toBe(0)
    expect(schemaVersion()).toBe(LATEST)
  })
})
