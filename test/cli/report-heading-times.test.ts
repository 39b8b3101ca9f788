import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execCli } from '../support/cli'
import { ROOT } from '../e2e/browser'
import { makeCall } from '../dashboard/seed'
import { type TestServer, startTestServer } from '../support/server'

/**
 * `burnrate report daily --since 2026-12-06T09:30 --until 2026-12-06T17:00` (the README: a day,
 * or an ISO time): the heading named the days only, "(2026-12-06 to 2026-12-06, …)", the words
 * a report of the whole day prints, so a report of a working day's hours read as the day's spend
 * (its row is keyed by the day either way). A bound that is not a midnight in the report's zone
 * is now shown with its time there, through a server and from the ledger file alike; days are
 * shown as before.
 */
const CLI = join(ROOT, 'out/main/cli.js')
let t: TestServer

beforeAll(async () => {
  t = await startTestServer({ timezone: 'America/New_York' })
  t.server.ledger.record(makeCall({ ts: Date.parse('2026-12-06T12:00:00Z'), cost_usd: 1 }))
  t.server.ledger.record(makeCall({ ts: Date.parse('2026-12-06T16:00:00Z'), cost_usd: 2 }))
  await t.server.ledger.flushed()
})
afterAll(async () => {
  await t.cleanup()
})

function cli(args: string[]): ReturnType<typeof execCli> {
  return execCli(CLI, [...args, '--config', t.configFile, '--data-dir', t.dir], { env: { ...process.env, NO_COLOR: '1', HOME: t.home } })
}

const CASES: [string[], string][] = [
  [['--since', '2026-12-06T09:30', '--until', '2026-12-06T17:00'], '(2026-12-06 09:30 to 2026-12-06 17:00, America/New_York)'],
  [['--since', '2026-12-06T14:30:15Z'], '(2026-12-06 09:30:15 to now, America/New_York)'],
  [['--since', '2026-12-06T10:00:00.250-05:00', '--until', '2026-12-07'], '(2026-12-06 10:00:00.250 to 2026-12-07, America/New_York)'],
  [['--since', '2026-12-06', '--until', '2026-12-06'], '(2026-12-06 to 2026-12-06, America/New_York)'],
  [['--since', '2026-12-06T05:00:00Z', '--until', '2026-12-07T05:00:00Z'], '(2026-12-06 to 2026-12-06, America/New_York)'],
]

describe('the heading of a report of hours', () => {
  for (const where of ['--url', '--local'] as const) {
    it.each(CASES)(`%j reads %s (${where === '--url' ? 'through the server' : 'from the ledger file'})`, async (window, heading) => {
      const r = await cli(['report', 'daily', ...window, ...(where === '--url' ? ['--url', t.url] : ['--local', '--no-import'])])
      expect(r.code, r.stderr).toBe(0)
      expect(r.stdout.split('\n')[0]).toBe(`Burnrate daily report ${heading}`)
    })
  }
})
