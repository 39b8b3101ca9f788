import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { reportZone } from '../../src/main/dashboard/rollup/report'
import { rebuildReportMonths } from '../../src/main/dashboard/rollup/report-build'
import { buildReport } from '../../src/main/report/report'
import { startOfDay } from '../../src/main/time/zone'
import { eventually } from '../support/http'
import { startTestServer } from '../support/server'
import { BODY, supersedeRig } from '../support/superseded'

/**
 * An imported call the proxy's record superseded, whose report rows were keyed at another day
 * start than the one its zone gives now: a ledger whose timezone changed under a release before
 * schema 26 kept the rows of a partly pruned day in the earlier zone and recorded no stretch of
 * them, so the supersede (and a re-price) computes the call's day in the new zone, where no row
 * is. The supersede wrote a new row there at -1 request, -1 imported and minus its cost, while
 * the row that counted the call kept it: `burnrate report` showed a +1 day and a -1 day.
 */

const DAY = 86_400_000

const rig = supersedeRig('burnrate-superseded-kept-zone')

describe('a superseded call whose report rows an earlier zone keyed', () => {
  it('leaves the row that counted it at 0 and writes no row of -1 request', async () => {
    // 03:00 UTC two days ago: noon in Tokyo, whose day began at 15:00 UTC the day before.
    const at = Math.floor(Date.now() / DAY) * DAY - 2 * DAY + 3 * 3_600_000
    const tokyoDay = startOfDay(at, 'Asia/Tokyo')
    const utcDay = startOfDay(at, 'UTC')
    expect(tokyoDay).not.toBe(utcDay)

    const first = await startTestServer({ import: { watch: false }, timezone: 'Asia/Tokyo' }, rig.upstream.url)
    const dir = first.dir
    try {
      const { db } = first.server
      expect(reportZone(db)).toBe('Asia/Tokyo')
      const home = rig.home()
      rig.transcript(home, 'old', JSON.stringify({
        type: 'assistant', sessionId: 'old', uuid: 'u-1', cwd: '/home/dev/shop', timestamp: new Date(at).toISOString(), requestId: 'req_sup',
        message: { ...BODY, usage: { ...BODY.usage, output_tokens: 1 } },
      }) + '\n')
      await rig.importLogs(first, home, 1)
      const id = db.prepare("SELECT id FROM calls WHERE source = 'import'").pluck().get() as number
      await eventually(() => (db.prepare('SELECT last_call_id FROM dash_state WHERE id = 1').pluck().get() as number) >= id, 10_000)
    } finally {
      await first.stop()
    }

    // What a release before schema 26 left after a change to UTC that kept this day (partly
    // pruned) in Tokyo's days: the rows as they were, the zone UTC, no stretches recorded.
    const file = new Database(first.dbFile)
    try {
      expect(file.prepare("SELECT day, requests, imported FROM dash_report_day WHERE dim = ''").all()).toEqual([{ day: tokyoDay, requests: 1, imported: 1 }])
      file.prepare("UPDATE dash_report_state SET tz = 'UTC', zones = NULL WHERE id = 1").run()
      rebuildReportMonths(file, 'UTC')
    } finally {
      file.close()
    }

    const t = await startTestServer({ import: { watch: false }, timezone: 'UTC' }, rig.upstream.url, dir)
    try {
      const { db } = t.server
      expect(reportZone(db)).toBe('UTC')
      const cost = db.prepare("SELECT cost_usd FROM calls WHERE source = 'import'").pluck().get() as number
      expect(cost).toBeGreaterThan(0)

      await rig.proxy(t, 'sk-ant-kept-zone-00000001')
      await rig.untilSuperseded(t)

      // No row of the report rollup counts fewer than no call.
      for (const table of ['dash_report_day', 'dash_report_month']) {
        expect(db.prepare(`SELECT count(*) FROM ${table} WHERE requests < 0 OR imported < 0 OR cost_usd < 0`).pluck().get(), table).toBe(0)
      }
      // The row that counted the imported call counts it no more.
      expect(db.prepare("SELECT requests, imported, cost_usd FROM dash_report_day WHERE dim = '' AND day = ?").get(tokyoDay)).toEqual({ requests: 0, imported: 0, cost_usd: 0 })
      expect(db.prepare("SELECT count(*) FROM dash_report_day WHERE day = ?").pluck().get(utcDay)).toBe(0)

      // The day report: the proxied call today, and no day of -1 request.
      const r = await buildReport(t.server.context.store, { kind: 'daily', since: null, until: null, tenant: null, timezone: 'UTC', limit: null }, reportZone(db))
      for (const row of r.rows) expect(row.requests, row.key).toBeGreaterThan(0)
      expect(r.totals.requests).toBe(1)
      expect(r.rows).toHaveLength(1)
    } finally {
      await t.cleanup()
    }
  })
})
