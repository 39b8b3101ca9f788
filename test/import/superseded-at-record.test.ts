import { writeFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import type { LogWatcher } from '../../src/main/import/watcher'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { eventually, request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { BODY, supersedeRig } from '../support/superseded'

/**
 * A Claude Code answer imported before the proxy recorded it (one of its content blocks streamed on
 * past the import's wait: its first line imported with a partial usage), then recorded by the
 * proxy. The proxy's record superseded the imported call only when the log was read again: a log
 * that never changed again kept both, the answer's money counted twice. It supersedes it as the
 * proxy records it. A superseded row, kept at $0 for the audit trail, is no request: one answer is
 * one request in every count (it was two).
 */

const rig = supersedeRig('burnrate-superseded')

/** One transcript line as Claude Code writes it as a content block ends (its usage the answer's so far). */
const line = (at: number, output: number) => JSON.stringify({
  type: 'assistant', sessionId: 'sup', uuid: `u-${at}`, cwd: '/home/dev/shop', timestamp: new Date(at).toISOString(), requestId: 'req_sup',
  message: { ...BODY, usage: { ...BODY.usage, output_tokens: output } },
}) + '\n'

async function setUp(name: string, supersedeAfterMs?: number): Promise<{ t: TestServer; w: LogWatcher; file: string; partial: { id: number; cost_usd: number } }> {
  const config = { ...ADMIN_CONFIG, import: { watch: false }, timezone: 'UTC', budgets: { rules: [{ api_key_pattern: '*', daily_limit_usd: 1000, action: 'warn' }] } }
  const t = await startTestServer(config, rig.upstream.url, undefined, { create: { supersedeAfterMs } })
  const { db, ledger } = t.server
  const home = rig.home()
  const w = rig.watcher(t, home)
  // Its first block's line, imported before the proxy recorded anything.
  const file = rig.transcript(home, name, line(Date.now() - 1000, 1))
  expect((await w.runOnce()).find((x) => x.agent === 'claude-code')).toMatchObject({ imported: 1 })
  const partial = db.prepare("SELECT id, cost_usd FROM calls WHERE source = 'import'").get() as { id: number; cost_usd: number }
  expect(partial.cost_usd).toBeGreaterThan(0)
  expect(ledger.spend.key('').month).toBe(partial.cost_usd)
  return { t, w, file, partial }
}

const keylessSpent = async (t: TestServer) => {
  const listed = (await request(`${t.url}/api/dashboard/budgets`)).json()
  return listed.rules.find((r: any) => r.api_key_hash === '').windows.find((x: any) => x.period === 'daily').spent_usd
}

describe('an imported answer the proxy records afterwards', () => {
  it('is superseded when the proxy records it: the answer\'s money is the proxy\'s, counted once', async () => {
    const { t, w } = await setUp('unchanged')
    try {
      const { db, ledger } = t.server
      await rig.proxy(t, 'sk-ant-superseded-0000001')
      const proxied = db.prepare("SELECT id, cost_usd FROM calls WHERE source = 'proxy'").get() as { id: number; cost_usd: number }
      // The log does not change: the watcher reads nothing, and the imported call still gives way.
      await eventually(() => (db.prepare("SELECT cost_usd FROM calls WHERE source = 'import'").pluck().get() as number) === 0, 10_000)
      expect((await w.runOnce()).find((x) => x.agent === 'claude-code')).toMatchObject({ unchanged: 1, imported: 0 })
      await w.stop()
      expect(db.prepare("SELECT input_tokens, output_tokens, cost_usd, superseded_by FROM calls WHERE source = 'import'").get()).toEqual({
        input_tokens: 0, output_tokens: 0, cost_usd: 0, superseded_by: proxied.id,
      })
      ledger.flush()
      const day = db.prepare('SELECT SUM(requests) AS requests, SUM(cost_usd) AS cost FROM dash_day').get() as any
      expect(day.cost).toBeCloseTo(proxied.cost_usd, 12)
      expect(day.requests).toBe(1)
      expect(ledger.spend.key('').month).toBe(0)
      expect(await keylessSpent(t)).toBe(0)
      // Its import key names the proxy's call.
      expect(db.prepare('SELECT call_id FROM import_keys').pluck().all()).toEqual([proxied.id])
    } finally {
      await t.cleanup()
    }
  })

  it('recorded by a server stopped before it looked: superseded when it starts again, the log still unchanged', async () => {
    const { t } = await setUp('stopped', 3_600_000)
    let again: TestServer | null = null
    try {
      await rig.proxy(t, 'sk-ant-superseded-0000003')
      await t.stop()
      again = await startTestServer({ import: { watch: false }, timezone: 'UTC' }, rig.upstream.url, t.dir)
      const { db, ledger } = again.server
      await eventually(() => (db.prepare("SELECT cost_usd FROM calls WHERE source = 'import'").pluck().get() as number) === 0, 10_000)
      const proxied = db.prepare("SELECT id, cost_usd FROM calls WHERE source = 'proxy'").get() as { id: number; cost_usd: number }
      expect(db.prepare("SELECT superseded_by FROM calls WHERE source = 'import'").pluck().get()).toBe(proxied.id)
      ledger.flush()
      expect(db.prepare('SELECT SUM(requests) AS requests, SUM(cost_usd) AS cost FROM dash_day').get()).toEqual({ requests: 1, cost: proxied.cost_usd })
      expect(ledger.spend.key('').month).toBe(0)
    } finally {
      await again?.stop()
      await t.cleanup()
    }
  })

  it('left at $0 by an older build (no superseded_by): no request from the next start on', async () => {
    const { t } = await setUp('older', 3_600_000)
    let again: TestServer | null = null
    try {
      await rig.proxy(t, 'sk-ant-superseded-0000005')
      await t.stop()
      // As an older build superseded it: its row at 0, the rollups still counting it as a request.
      const db = new Database(t.dbFile)
      db.prepare("UPDATE calls SET input_tokens = 0, output_tokens = 0, cost_usd = 0 WHERE source = 'import'").run()
      db.close()
      again = await startTestServer({ import: { watch: false }, timezone: 'UTC' }, rig.upstream.url, t.dir)
      await rig.untilSuperseded(again)
      expect(again.server.db.prepare('SELECT SUM(requests) FROM dash_day').pluck().get()).toBe(1)
    } finally {
      await again?.stop()
      await t.cleanup()
    }
  })

  it('superseded at the next read of its log: one request in the dashboard, the report rollup and the calls read raw', async () => {
    // The proxy does not look for the imported twin as it records the answer (a server stopped at that moment).
    const { t, w, file } = await setUp('grown', 3_600_000)
    try {
      const { db, ledger } = t.server
      await rig.proxy(t, 'sk-ant-superseded-0000002')
      writeFileSync(file, line(Date.now() - 1000, 1) + line(Date.now() - 500, BODY.usage.output_tokens))
      expect((await w.runOnce()).find((x) => x.agent === 'claude-code')).toMatchObject({ superseded: 1 })
      await w.stop()
      ledger.flush()
      // Every request count of the one answer: 1.
      for (const table of ['dash_5m', 'dash_hour', 'dash_day']) expect(db.prepare(`SELECT SUM(requests) FROM ${table}`).pluck().get()).toBe(1)
      expect(db.prepare("SELECT SUM(requests) FROM dash_dim_day WHERE dim = 'model'").pluck().get()).toBe(1)
      // The report rollup (`burnrate report`): one request, none of it imported.
      expect(db.prepare("SELECT SUM(requests) AS requests, SUM(imported) AS imported FROM dash_report_day WHERE dim = ''").get()).toEqual({ requests: 1, imported: 0 })
      const summary = (await request(`${t.url}/api/dashboard/summary`)).json()
      expect(summary.today_requests).toBe(1)
      const stats = (await request(`${t.url}/api/dashboard/stats?range=24h`)).json()
      expect(stats.total_requests).toBe(1)
      const series = (await request(`${t.url}/api/dashboard/timeseries?range=30m`)).json()
      expect(series.points.reduce((n: number, p: any) => n + p.requests, 0)).toBe(1)
      const costs = (await request(`${t.url}/api/dashboard/costs?group_by=model&range=24h`)).json()
      expect(costs.rows.reduce((n: number, r: any) => n + r.requests, 0)).toBe(1)
      const sessions = (await request(`${t.url}/api/dashboard/sessions`)).json()
      expect(sessions.sessions.reduce((n: number, s: any) => n + s.requests, 0)).toBe(1)
      // The keyless calls' month in the admin API: the imported call is no request of its own (no
      // call of the keyless key left this month: not listed, as after a restart).
      const keyless = (url: string) => admin(url, 'GET', '/api-keys').then((r) => r.json().find((k: any) => k.api_key_hash === ''))
      expect(await keyless(t.url)).toBeUndefined()
      // The audit trail: the imported row stays, at $0, naming the proxy's call.
      expect(db.prepare("SELECT count(*) FROM calls WHERE source = 'import' AND superseded_by IS NOT NULL").pluck().get()).toBe(1)
      // Started again, the counts read from the ledger say the same.
      const again = await t.restart()
      try {
        // (No call of its own this month: not listed.)
        expect((await keyless(again.url))?.requests_month ?? 0).toBe(0)
        expect((await request(`${again.url}/api/dashboard/summary`)).json().today_requests).toBe(1)
      } finally {
        await again.cleanup()
      }
    } finally {
      await t.cleanup()
    }
  })
})
