import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { canMount, fillDisk, mountTmpfs, unmount } from '../support/tmpfs'

/**
 * The built server started on a data folder whose disk is full (a real small tmpfs; needs root):
 * it says the disk is full and names the folder, with the exit code of any start-up refusal (1),
 * rather than "disk I/O error ... make sure the data folder is writable", which sent people
 * looking at permissions.
 */

const ROOT = resolve(__dirname, '../..')
const CLI = join(ROOT, 'out/main/cli.js')
const env = { ...process.env, BURNRATE_PRICE_AUTO_UPDATE: 'false', BURNRATE_CONFIG: '', BURNRATE_PORT: '', BURNRATE_DATA_DIR: '' }

let mount: string | null = null
beforeAll(() => {
  if (!existsSync(CLI)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
})
afterEach(() => {
  if (mount) unmount(mount)
  mount = null
})

function start(dataDir: string): { code: number | null; stderr: string } {
  const cfg = join(mount!, 'cfg.yaml')
  const r = spawnSync(process.execPath, [CLI, '--config', cfg, '--data-dir', dataDir, '--port', '0'], { env, encoding: 'utf8', timeout: 60_000 })
  return { code: r.status, stderr: r.stderr.trim() }
}

describe.skipIf(!canMount)('start-up on a full disk (a small tmpfs; needs root)', () => {
  it.each([
    ['a new data folder', false],
    ['a data folder whose database exists (its -shm file cannot be made)', true],
  ])('%s: the disk is said to be full, naming the folder; exit code 1', (_name, existing) => {
    mount = mountTmpfs(1024)!
    const dataDir = join(mount, 'data')
    mkdirSync(dataDir)
    writeFileSync(join(mount, 'cfg.yaml'), 'providers: {}\n')
    if (existing) {
      const db = new Database(join(dataDir, 'burnrate.db'))
      db.pragma('journal_mode = WAL')
      db.exec('CREATE TABLE t (x)')
      db.close()
    }
    fillDisk(join(mount, 'filler'))
    const r = start(dataDir)
    expect(r.code).toBe(1)
    expect(r.stderr).toContain(`the disk holding the data folder ${dataDir} is full`)
    expect(r.stderr).not.toContain('make sure the data folder is writable')
  })
})
