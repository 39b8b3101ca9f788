import { describe, expect, it } from 'vitest'
import { GROUP_BYS } from '../../src/shared/api'
import { reportZone } from '../../src/main/dashboard/rollup/report'
import { RANKED_KINDS, REPORT_KINDS, buildReport } from '../../src/main/report/report'
import { eventually, request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { BODY, supersedeRig } from '../support/superseded'

/**
 * `burnrate report`'s other groupings (day, week, month, model, agent, project) and the dashboard's
 * costs by any grouping, and an imported call the proxy's record superseded: a group whose only call
 * it was is no group. Its rows in the rollups (folded before it was superseded) stayed at $0 and
 * 0 requests, so the report and the costs listed it (and counted it in total_rows), where a read
 * of the calls (or a rebuild of the rollups) has no such group. (Sessions:
 * ./superseded-report.test.ts.)
 */

const DAY = 86_400_000
/** The imported call's model: one the proxy's record of the answer does not name. */
const OLD_MODEL = 'claude-haiku-4-5'

const rig = supersedeRig('burnrate-superseded-groups')

/**
 * A server that imported an answer's first line at `at` (agent claude-code, project /home/dev/shop,
 * session `old`, model OLD_MODEL, no key), folded it into the rollups, then proxied the answer now
 * (no agent, project or session of its own, a key); resolves once the imported call is superseded.
 */
async function supersededAt(at: number): Promise<TestServer> {
  const t = await startTestServer({ import: { watch: false }, timezone: 'UTC' }, rig.upstream.url)
  const { db } = t.server
  expect(reportZone(db)).toBe('UTC')
  const home = rig.home()
  rig.transcript(home, 'old', JSON.stringify({
    type: 'assistant', sessionId: 'old', uuid: 'u-1', cwd: '/home/dev/shop', timestamp: new Date(at).toISOString(), requestId: 'req_sup',
    message: { ...BODY, model: OLD_MODEL, usage: { ...BODY.usage, output_tokens: 1 } },
  }) + '\n')
  await rig.importLogs(t, home, 1)
  const id = db.prepare("SELECT id FROM calls WHERE source = 'import'").pluck().get() as number
  // Folded into the rollups before it is superseded.
  await eventually(() => (db.prepare('SELECT last_call_id FROM dash_state WHERE id = 1').pluck().get() as number) >= id, 10_000)
  expect(db.prepare("SELECT count(*) FROM dash_report_day WHERE dim = 'project' AND key = '/home/dev/shop'").pluck().get()).toBe(1)

  await rig.proxy(t, 'sk-ant-groups-0000000001')
  await rig.untilSuperseded(t)
  await eventually(() => (db.prepare('SELECT last_call_id FROM dash_state WHERE id = 1').pluck().get() as number) > id, 10_000)
  return t
}

describe('a group whose only call was superseded', () => {
  it('is no row of any report kind, over the report rollup\'s days and months', async () => {
    // Forty days ago: another day, week and month than the proxy's record, a whole month of the rollup.
    const t = await supersededAt(Date.now() - 40 * DAY)
    try {
      const { db } = t.server
      const proxied = db.prepare("SELECT cost_usd FROM calls WHERE source = 'proxy'").pluck().get() as number
      for (const kind of REPORT_KINDS) {
        for (const tenant of [null, '']) {
          for (const limit of RANKED_KINDS.includes(kind) ? [null, 100] : [null]) {
            const q = { kind, since: null, until: null, tenant, timezone: 'UTC', limit }
            const what = `${kind}, tenant ${tenant}, limit ${limit}`
            const r = await buildReport(t.server.context.store, q, reportZone(db))
            // The proxy's record is the answer's one request, in one group of every kind.
            expect(r.rows.map((x) => [x.requests, x.cost_usd]), what).toEqual([[1, proxied]])
            expect(r.total_rows, what).toBe(1)
            expect(r.totals.requests, what).toBe(1)
            // As the calls themselves sum it (what a rebuild of the rollup folds).
            const fromCalls = await buildReport(t.server.context.store, q, null)
            expect(r.rows, what).toEqual(fromCalls.rows)
          }
        }
      }
      const old = (kind: string) => buildReport(t.server.context.store, { kind: kind as any, since: null, until: null, tenant: null, timezone: 'UTC' }, reportZone(db))
      expect((await old('model')).rows.map((x) => x.key)).not.toContain(OLD_MODEL)
      expect((await old('agent')).rows.map((x) => x.key)).not.toContain('claude-code')
      expect((await old('project')).rows.map((x) => x.key)).not.toContain('/home/dev/shop')
      // Through the API too.
      const api = (await request(`${t.url}/api/dashboard/report?kind=monthly`)).json()
      expect(api.rows.map((x: any) => x.requests)).toEqual([1])
      expect(api.total_rows).toBe(1)
    } finally {
      await t.cleanup()
    }
  })

  it('is no row of the dashboard\'s costs, by any grouping', async () => {
    // Two days ago: a whole day (and whole hours) of the dashboard's rollups, in its 7d and 30d ranges.
    const t = await supersededAt(Date.now() - 2 * DAY)
    try {
      const proxied = t.server.db.prepare("SELECT cost_usd FROM calls WHERE source = 'proxy'").pluck().get() as number
      for (const range of ['7d', '30d']) {
        for (const groupBy of GROUP_BYS) {
          for (const limit of [1, 100]) {
            const c = (await request(`${t.url}/api/dashboard/costs?group_by=${groupBy}&range=${range}&limit=${limit}`)).json()
            const what = `${groupBy}, ${range}, limit ${limit}`
            // One group of every grouping, and no `(other)` row of a $0 group.
            expect(c.rows.map((x: any) => [x.requests, x.cost_usd, x.other ?? false]), what).toEqual([[1, proxied, false]])
            expect(c.total_rows, what).toBe(1)
          }
        }
      }
    } finally {
      await t.cleanup()
    }
  })
})
