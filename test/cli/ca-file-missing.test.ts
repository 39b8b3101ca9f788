import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makePrivateCa, type PrivateCa } from '../network/support'
import { startLedger } from '../support/cli'

/**
 * `upstream.ca_file` is needed only by what calls out through it: the server. A command of the
 * built CLI that makes no call out (`report --local`, `connect`) works while the file is missing;
 * `burnrate serve` on the same config refuses to start, naming where the file was looked for,
 * and starts once it is there.
 */

const ROOT = resolve(__dirname, '../..')
const CLI = join(ROOT, 'out/main/cli.js')

let dir: string
let ca: PrivateCa
let env: NodeJS.ProcessEnv
const children: ChildProcess[] = []

beforeAll(() => {
  if (!existsSync(CLI)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
  dir = mkdtempSync(join(tmpdir(), 'burnrate-cli-ca-'))
  mkdirSync(join(dir, 'etc'))
  mkdirSync(join(dir, 'home'))
  writeFileSync(join(dir, 'etc', 'config.yaml'), 'upstream:\n  ca_file: certs/ca.pem\n')
  ca = makePrivateCa()
  const home = join(dir, 'home')
  env = {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local/share'),
    CLAUDE_CONFIG_DIR: '',
    CODEX_HOME: '',
    BURNRATE_PRICE_AUTO_UPDATE: 'false',
    BURNRATE_CONFIG: '',
    BURNRATE_PORT: '',
    BURNRATE_HOST: '',
    BURNRATE_DATA_DIR: '',
    BURNRATE_DATABASE_URL: '',
    TZ: 'UTC',
  }
})
afterAll(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
  if (ca) rmSync(ca.dir, { recursive: true, force: true })
})

const cfg = () => join(dir, 'etc', 'config.yaml')
const data = () => join(dir, 'data')

function burnrate(args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args, '--config', cfg(), '--data-dir', data()], { cwd: dir, env, encoding: 'utf8', timeout: 60_000 })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

/** `burnrate serve` on the config: that it listened, or how it ended. */
function serve(): Promise<{ listening: true } | { code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [CLI, 'serve', '--config', cfg(), '--data-dir', data(), '--port', '0'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  let out = ''
  let stderr = ''
  return new Promise((done) => {
    const on = (d: Buffer) => {
      out += d
      if (/listening on http:\/\//.test(out)) done({ listening: true })
    }
    child.stdout!.on('data', on)
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d
      on(d)
    })
    child.once('exit', (code) => done({ code, stderr: stderr.trim() }))
  })
}

describe('a config whose upstream.ca_file is not there', () => {
  it('commands that make no call out work; the server refuses to start, naming the file, and starts once it is there', async () => {
    startLedger(data()) // a data folder named that holds no ledger is refused
    const report = burnrate(['report', 'daily', '--local', '--no-import', '--json'])
    expect(report.code, report.stderr).toBe(0)
    expect(JSON.parse(report.stdout)).toMatchObject({ rows: [], totals: { requests: 0 } })

    const connect = burnrate(['connect'])
    expect(connect.code, connect.stderr).toBe(0)
    expect(connect.stdout).toContain('burnrate connect <agent> points one at http://127.0.0.1:8787')

    const missing = join(dir, 'etc', 'certs', 'ca.pem')
    expect(await serve()).toEqual({
      code: 1,
      stderr: `burnrate: config ${cfg()}: upstream.ca_file: "certs/ca.pem" is ${missing} (a relative path is taken from the config file's folder, ~/ is your home folder), which does not exist`,
    })
    // Refused before it claimed the data folder.
    expect(existsSync(join(data(), 'server.lock'))).toBe(false)

    // Where an earlier release, started in this folder, would have found it: the message says so.
    mkdirSync(join(dir, 'certs'))
    copyFileSync(ca.caFile, join(dir, 'certs', 'ca.pem'))
    expect(await serve()).toMatchObject({
      code: 1,
      stderr: expect.stringContaining(`does not exist; ${join(dir, 'certs', 'ca.pem')} (where earlier releases took it from the working folder) is there: move it to ${missing}`),
    })

    mkdirSync(join(dir, 'etc', 'certs'))
    copyFileSync(ca.caFile, missing)
    expect(await serve()).toEqual({ listening: true })
  })
})
