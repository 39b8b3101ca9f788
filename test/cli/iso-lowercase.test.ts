import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execCli } from '../support/cli'
import { ROOT } from '../e2e/browser'
import { makeCall } from '../dashboard/seed'
import { type TestServer, startTestServer } from '../support/server'

/**
 * An ISO time written with a lowercase `t` or `z` (`2026-11-10t11:00:00z`), which ISO 8601 and
 * RFC 3339 allow (the two letters are case-insensitive), was refused by `--since` and `--until`
 * with exit 2 ('must be a day of the calendar or an ISO time'). It is read as its uppercase
 * twin, from the ledger file and through a server (whose API reads times the same way), by
 * `report` and `export` alike.
 */
const CLI = join(ROOT, 'out/main/cli.js')
let t: TestServer

beforeAll(async () => {
  t = await startTestServer({ timezone: 'UTC' })
  t.server.ledger.record(makeCall({ ts: Date.parse('2026-11-10T10:00:00Z'), cost_usd: 1 }))
  t.server.ledger.record(makeCall({ ts: Date.parse('2026-11-10T12:00:00Z'), cost_usd: 2 }))
  await t.server.ledger.flushed()
})
afterAll(async () => {
  await t.cleanup()
})

const cli = (...args: string[]) => execCli(CLI, [...args, '--config', t.configFile, '--data-dir', t.dir], { env: { ...process.env, NO_COLOR: '1' } })

describe('--since and --until with a lowercase t or z', () => {
  for (const mode of ['--local', 'server'] as const) {
    it(`report and export read them as the uppercase (${mode})`, async () => {
      const where = mode === '--local' ? ['--local'] : ['--url', t.url]
      for (const [since, until] of [['2026-11-10t11:00:00z', '2026-11-10t13:00:00Z'], ['2026-11-10T11:00:00z', '2026-11-10t13:00'], ['2026-11-10t11:00:00+00:00', '2026-11-10t13:00:00.000z']]) {
        const r = await cli('report', 'daily', '--json', '--no-import', '--since', since, '--until', until, ...where)
        expect(r.code, r.stderr).toBe(0)
        expect(JSON.parse(r.stdout)).toMatchObject({ since: '2026-11-10T11:00:00.000Z', until: '2026-11-10T13:00:00.000Z', totals: { cost_usd: 2 } })
        const e = await cli('export', '--format', 'json', '--since', since, '--until', until, ...where)
        expect(e.code, e.stderr).toBe(0)
        expect(JSON.parse(e.stdout).calls.map((c: { cost_usd: number }) => c.cost_usd)).toEqual([2])
      }
    }, 60_000)
  }
})
