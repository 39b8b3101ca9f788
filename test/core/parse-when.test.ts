import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseWhen } from '../../src/main/report/report'
import { getJson } from '../dashboard/seed'
import { startLedger } from '../support/cli'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A report's or export's `since`/`until` day must be a day of the calendar: 2026-02-29 or
 * 2026-04-31 used to roll over into March or May (`--until 2026-02-29` reported up to and
 * including March 1). The CLI refuses such a day with exit 2, the API with 400 invalid_request.
 */
const ROOT = resolve(__dirname, '../..')
const CLI = join(ROOT, 'out/main/cli.js')
const BAD = ['2026-02-29', '2026-04-31', '20260230', '2026-13-01', '2026-00-10', '2026-01-00', '2026-02-30T10:00:00Z', '2026-04-31T10:00']

let dir: string
let t: TestServer

beforeAll(async () => {
  if (!existsSync(CLI)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
  dir = mkdtempSync(join(tmpdir(), 'burnrate-parse-when-'))
  mkdirSync(join(dir, 'home'))
  startLedger(join(dir, 'data')) // a data folder named that holds no ledger is refused
  t = await startTestServer({ timezone: 'UTC' })
}, 180_000)
afterAll(async () => {
  await t?.cleanup()
  rmSync(dir, { recursive: true, force: true })
})

function burnrate(args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args, '--data-dir', join(dir, 'data')], {
    env: { ...process.env, HOME: join(dir, 'home'), XDG_CONFIG_HOME: join(dir, 'home/.config'), BURNRATE_PORT: '1', TZ: 'UTC' },
    encoding: 'utf8',
    timeout: 60_000,
  })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

describe('report and export days that do not exist', () => {
  it('parseWhen refuses them, in either form, and still reads the days that exist', () => {
    for (const s of BAD) {
      expect(parseWhen(s, 'UTC'), s).toBeNull()
      expect(parseWhen(s, 'UTC', true), s).toBeNull()
    }
    expect(new Date(parseWhen('2024-02-29', 'UTC')!).toISOString()).toBe('2024-02-29T00:00:00.000Z')
    expect(new Date(parseWhen('2026-02-28', 'UTC', true)!).toISOString()).toBe('2026-03-01T00:00:00.000Z')
    expect(new Date(parseWhen('2026-12-31', 'UTC', true)!).toISOString()).toBe('2027-01-01T00:00:00.000Z')
    expect(new Date(parseWhen('2026-04-30T10:00:00Z', 'UTC')!).toISOString()).toBe('2026-04-30T10:00:00.000Z')
  })

  it('`burnrate report` and `burnrate export` exit 2 with a message naming the option and the day', () => {
    for (const [cmd, name, day] of [['report', 'until', '2026-02-29'], ['report', 'since', '2026-04-31'], ['export', 'until', '2026-02-29'], ['export', 'since', '2026-04-31']]) {
      const r = burnrate(cmd === 'report' ? ['report', 'daily', '--no-import', `--${name}`, day] : ['export', `--${name}`, day])
      expect(r.code, `${cmd} --${name} ${day}`).toBe(2)
      expect(r.stderr).toContain(`--${name} must be a day of the calendar`)
      expect(r.stderr).toContain(day)
      expect(r.stdout).toBe('')
    }
    expect(burnrate(['report', 'daily', '--no-import', '--since', '2024-02-29', '--until', '2024-02-29']).code).toBe(0)
  })

  it('the API answers 400 invalid_request naming since or until', async () => {
    for (const [path, param] of [['report?kind=daily&until=2026-02-29', 'until'], ['report?kind=daily&since=2026-04-31', 'since'], ['export?format=json&since=2026-02-30T00:00:00Z', 'since']]) {
      const { status, body } = await getJson(`${t.url}/api/dashboard/${path}`)
      expect(status, path).toBe(400)
      expect(body.error).toMatchObject({ type: 'invalid_request', param })
      expect(body.error.message).toContain(param)
    }
    expect((await getJson(`${t.url}/api/dashboard/report?kind=daily&since=2024-02-29&until=2024-02-29`)).status).toBe(200)
  })
})
