import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execCli } from '../support/cli'
import { ROOT } from '../e2e/browser'
import { makeCall } from '../dashboard/seed'
import { type TestServer, startTestServer } from '../support/server'

/**
 * `burnrate report` and `burnrate export` with `--until` before `--since` (the two swapped): from
 * the ledger file they printed an empty report or export (exit 0, "no spend" for a month that
 * had some), through a server the API's 400 as a failure (exit 1). The built CLI refuses it
 * itself, the same words and exit code 2 (a bad value on the command line) either way, and an
 * export's `-o` file is not written.
 */
const CLI = join(ROOT, 'out/main/cli.js')
let t: TestServer

beforeAll(async () => {
  t = await startTestServer({ timezone: 'UTC' })
  t.server.ledger.record(makeCall({ ts: Date.parse('2026-11-10T12:00:00Z'), cost_usd: 1 }))
  await t.server.ledger.flushed()
})
afterAll(async () => {
  await t.cleanup()
})

function cli(args: string[]): ReturnType<typeof execCli> {
  return execCli(CLI, [...args, '--config', t.configFile, '--data-dir', t.dir], { env: { ...process.env, NO_COLOR: '1' } })
}

const SWAPPED = [
  ['2026-11-30', '2026-11-01', 'burnrate: --until (2026-11-01, up to 2026-11-02T00:00:00.000Z) must be after --since (2026-11-30, from 2026-11-30T00:00:00.000Z)\n'],
  ['2026-11-10T12:00:00Z', '2026-11-10T12:00:00Z', 'burnrate: --until (2026-11-10T12:00:00Z, up to 2026-11-10T12:00:00.000Z) must be after --since (2026-11-10T12:00:00Z, from 2026-11-10T12:00:00.000Z)\n'],
]

describe('a window of --since and --until', () => {
  for (const mode of ['--local', 'server'] as const) {
    it(`report and export refuse it with exit code 2 (${mode})`, async () => {
      const where = mode === '--local' ? ['--local'] : ['--url', t.url]
      for (const [since, until, words] of SWAPPED) {
        for (const command of [['report', 'daily', '--no-import'], ['report', 'model', '--json', '--no-import'], ['export', '--format', 'csv'], ['export', '--format', 'json']]) {
          const r = await cli([...command, '--since', since, '--until', until, ...where])
          expect({ code: r.code, stdout: r.stdout, stderr: r.stderr }, `${command.join(' ')} ${mode}`).toEqual({ code: 2, stdout: '', stderr: words })
        }
        const file = join(t.dir, `swapped-${mode}.csv`)
        const r = await cli(['export', '--since', since, '--until', until, '-o', file, ...where])
        expect(r.code).toBe(2)
        expect(existsSync(file)).toBe(false)
      }
    }, 60_000)
  }

  it('answers --until 9999-12-31 with no end (not a year 10000) and refuses a --since past 9999, with exit code 2', async () => {
    const r = await cli(['report', 'monthly', '--since', '2026-11-01', '--until', '9999-12-31', '--json', '--local', '--no-import'])
    expect(r.code, r.stderr).toBe(0)
    expect(JSON.parse(r.stdout)).toMatchObject({ since: '2026-11-01T00:00:00.000Z', until: null, totals: { cost_usd: 1 } })
    for (const where of [['--local'], ['--url', t.url]]) {
      const late = await cli(['export', '--since', '9999-12-31T23:00:00-05:00', ...where])
      expect({ code: late.code, stdout: late.stdout, stderr: late.stderr }).toEqual({
        code: 2,
        stdout: '',
        stderr: 'burnrate: --since (9999-12-31T23:00:00-05:00) must begin before the year 10000; calls bear times of the years 0000 to 9999\n',
      })
    }
  })

  it('still reports the same day as since and until, that whole day', async () => {
    const r = await cli(['report', 'daily', '--since', '2026-11-10', '--until', '2026-11-10', '--json', '--local', '--no-import'])
    expect(r.code, r.stderr).toBe(0)
    expect(JSON.parse(r.stdout).rows.map((x: { key: string }) => x.key)).toEqual(['2026-11-10'])
  })
})
