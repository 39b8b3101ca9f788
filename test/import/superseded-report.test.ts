import { describe, expect, it } from 'vitest'
import { reportZone } from '../../src/main/dashboard/rollup/report'
import { buildReport } from '../../src/main/report/report'
import { eventually, request } from '../support/http'
import { startTestServer } from '../support/server'
import { BODY, supersedeRig } from '../support/superseded'

/**
 * `burnrate report`'s session view and an imported call the proxy's record superseded: a session
 * whose only call it was is no session, as the dashboard's sessions list has it. Its rows in the
 * report rollup (folded before it was superseded) stayed at $0 and 0 requests, so the report
 * listed it (and counted it in total_rows), where a rebuild of the rollup has no row for it.
 */

const DAY = 86_400_000

const rig = supersedeRig('burnrate-superseded-report')

describe('a session whose only call was superseded, in the report', () => {
  it('is listed neither by the session report nor by the dashboard', async () => {
    const t = await startTestServer({ import: { watch: false }, timezone: 'UTC' }, rig.upstream.url)
    try {
      const { db } = t.server
      expect(reportZone(db)).toBe('UTC')
      // The answer's first line, two days ago (a whole day of the report rollup), imported.
      const at = Date.now() - 2 * DAY
      const home = rig.home()
      rig.transcript(home, 'old', JSON.stringify({
        type: 'assistant', sessionId: 'old', uuid: 'u-1', cwd: '/home/dev/shop', timestamp: new Date(at).toISOString(), requestId: 'req_sup',
        message: { ...BODY, usage: { ...BODY.usage, output_tokens: 1 } },
      }) + '\n')
      await rig.importLogs(t, home, 1)
      const id = db.prepare("SELECT id FROM calls WHERE source = 'import'").pluck().get() as number
      // Folded into the rollups before it is superseded.
      await eventually(() => (db.prepare('SELECT last_call_id FROM dash_state WHERE id = 1').pluck().get() as number) >= id, 10_000)
      expect(db.prepare("SELECT count(*) FROM dash_report_day WHERE dim = 'session' AND key = 'old'").pluck().get()).toBe(1)

      await rig.proxy(t, 'sk-ant-report-000000001')
      await rig.untilSuperseded(t)

      const listed = (await request(`${t.url}/api/dashboard/sessions`)).json()
      expect(listed.sessions.map((s: any) => s.session)).not.toContain('old')
      for (const limit of [null, 100]) {
        const r = await buildReport(t.server.context.store, { kind: 'session', since: null, until: null, tenant: null, timezone: 'UTC', limit }, reportZone(db))
        expect(r.rows.map((x) => x.key), `limit ${limit}`).not.toContain('old')
        expect(r.total_rows, `limit ${limit}`).toBe(r.rows.length)
        expect(r.totals.requests).toBe(1)
      }
    } finally {
      await t.cleanup()
    }
  })
})
