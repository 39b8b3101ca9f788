import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execCli } from '../support/cli'
import { ROOT } from '../e2e/browser'
import { makeCall } from '../dashboard/seed'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * An ISO time whose offset is whole hours written as hours alone (`2026-11-10T16:00+05`, which
 * ISO 8601 allows as it allows `+05:00` and `+0500`) was refused by `--since` and `--until` with
 * exit 2 and by the API's `since` and `until` with 400: Date.parse reads only `+05:00` and `+0500`.
 * It is read as `+05:00`, from the ledger file and through a server, by `report` and `export`.
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
const WINDOWS = [
  ['2026-11-10T16:00+05', '2026-11-10T10:00-03'],
  ['2026-11-10T16:00:00+05', '2026-11-10T18:30:00+0530'],
  ['2026-11-10T16:00:00.000+05', '2026-11-10T13:00:00+00'],
]

describe('--since and --until with an offset of hours alone', () => {
  it('the API reads since=…+05 as +05:00', async () => {
    for (const [since, until] of WINDOWS) {
      const r = await request(`${t.url}/api/dashboard/report?kind=daily&since=${encodeURIComponent(since)}&until=${encodeURIComponent(until)}`)
      expect(r.status, r.text).toBe(200)
      expect(r.json()).toMatchObject({ since: '2026-11-10T11:00:00.000Z', until: '2026-11-10T13:00:00.000Z', totals: { cost_usd: 2 } })
    }
  })

  for (const mode of ['--local', 'server'] as const) {
    it(`report and export read them (${mode})`, async () => {
      const where = mode === '--local' ? ['--local'] : ['--url', t.url]
      for (const [since, until] of WINDOWS) {
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
