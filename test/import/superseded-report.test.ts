import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { reportZone } from '../../src/main/dashboard/rollup/report'
import { LogWatcher } from '../../src/main/import/watcher'
import { silentLogger } from '../../src/main/log'
import { Pricer } from '../../src/main/pricing/price'
import { buildReport } from '../../src/main/report/report'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { startTestServer } from '../support/server'

/**
 * `burnrate report`'s session view and an imported call the proxy's record superseded: a session
 * whose only call it was is no session, as the dashboard's sessions list has it. Its rows in the
 * report rollup (folded before it was superseded) stayed at $0 and 0 requests, so the report
 * listed it (and counted it in total_rows), where a rebuild of the rollup has no row for it.
 */

const BODY = JSON.parse(fixture('anthropic/messages-nonstream-basic.json').toString())
const DAY = 86_400_000

let upstream: MockUpstream
let home: string
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }))
  home = mkdtempSync(join(tmpdir(), 'burnrate-superseded-report-'))
})
afterAll(async () => {
  await upstream.close()
  rmSync(home, { recursive: true, force: true })
})

describe('a session whose only call was superseded, in the report', () => {
  it('is listed neither by the session report nor by the dashboard', async () => {
    const t = await startTestServer({ import: { watch: false }, timezone: 'UTC' }, upstream.url)
    try {
      const { db, ledger } = t.server
      expect(reportZone(db)).toBe('UTC')
      // The answer's first line, two days ago (a whole day of the report rollup), imported.
      const at = Date.now() - 2 * DAY
      mkdirSync(join(home, '.claude/projects/-home-dev-shop'), { recursive: true })
      writeFileSync(join(home, '.claude/projects/-home-dev-shop/old.jsonl'), JSON.stringify({
        type: 'assistant', sessionId: 'old', uuid: 'u-1', cwd: '/home/dev/shop', timestamp: new Date(at).toISOString(), requestId: 'req_sup',
        message: { ...BODY, usage: { ...BODY.usage, output_tokens: 1 } },
      }) + '\n')
      const w = new LogWatcher({ db, ledger, pricer: new Pricer(), log: silentLogger, env: {}, home, budgets: () => t.server.context.budgets, settleMs: 0 })
      expect((await w.runOnce()).find((x) => x.agent === 'claude-code')).toMatchObject({ imported: 1 })
      await w.stop()
      ledger.flush()
      const id = db.prepare("SELECT id FROM calls WHERE source = 'import'").pluck().get() as number
      // Folded into the rollups before it is superseded.
      await eventually(() => (db.prepare('SELECT last_call_id FROM dash_state WHERE id = 1').pluck().get() as number) >= id, 10_000)
      expect(db.prepare("SELECT count(*) FROM dash_report_day WHERE dim = 'session' AND key = 'old'").pluck().get()).toBe(1)

      expect((await postJson(`${t.url}/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', messages: [] }, { 'x-api-key': 'sk-ant-report-000000001' })).status).toBe(200)
      expect(await ledger.flushed()).toBe(true)
      await eventually(() => db.prepare("SELECT superseded_by FROM calls WHERE source = 'import'").pluck().get() !== null, 10_000)
      ledger.flush()

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
