import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execCli } from '../support/cli'
import { ROOT } from '../e2e/browser'
import { makeCall } from '../dashboard/seed'
import { type TestServer, startTestServer } from '../support/server'

/**
 * Chile springs forward at midnight: 2026-09-06 begins at 01:00 in America/Santiago (00:00 never
 * happens). `burnrate report daily --since 2026-09-06` headed its report "(2026-09-06 01:00 to …)",
 * and `--until 2026-09-05` "(… to 2026-09-06 01:00, …)", the words of a report of hours, and the
 * second one reaching into a day it does not hold: the heading took a bound for a day only when
 * its wall clock read 00:00:00. A bound that begins a day of the zone is now shown as that day
 * (an end as the day before), through a server and from the ledger file alike.
 */
const CLI = join(ROOT, 'out/main/cli.js')
let t: TestServer

beforeAll(async () => {
  t = await startTestServer({ timezone: 'America/Santiago' })
  t.server.ledger.record(makeCall({ ts: Date.parse('2026-09-05T12:00:00Z'), cost_usd: 1 }))
  t.server.ledger.record(makeCall({ ts: Date.parse('2026-09-06T12:00:00Z'), cost_usd: 2 }))
  await t.server.ledger.flushed()
})
afterAll(async () => {
  await t.cleanup()
})

function cli(args: string[]): ReturnType<typeof execCli> {
  return execCli(CLI, [...args, '--config', t.configFile, '--data-dir', t.dir], { env: { ...process.env, NO_COLOR: '1', HOME: t.home } })
}

const CASES: [string[], string, string][] = [
  [['--since', '2026-09-06', '--until', '2026-09-06'], '(2026-09-06 to 2026-09-06, America/Santiago)', '2026-09-06'],
  [['--since', '2026-09-01', '--until', '2026-09-05'], '(2026-09-01 to 2026-09-05, America/Santiago)', '2026-09-05'],
  // The same instants as ISO times are those days too.
  [['--since', '2026-09-06T04:00:00Z', '--until', '2026-09-07T03:00:00Z'], '(2026-09-06 to 2026-09-06, America/Santiago)', '2026-09-06'],
]

describe('the heading of a report whose days begin where midnight is skipped', () => {
  for (const where of ['--url', '--local'] as const) {
    it.each(CASES)(`%j reads %s (${where === '--url' ? 'through the server' : 'from the ledger file'})`, async (window, heading, day) => {
      const r = await cli(['report', 'daily', ...window, ...(where === '--url' ? ['--url', t.url] : ['--local', '--no-import'])])
      expect(r.code, r.stderr).toBe(0)
      const lines = r.stdout.split('\n')
      expect(lines[0]).toBe(`Burnrate daily report ${heading}`)
      // The one day the window holds is its one row.
      expect(lines.map((l) => /^│ (2026-09-\d\d) /.exec(l)?.[1]).filter(Boolean)).toEqual([day])
    })
  }
})
