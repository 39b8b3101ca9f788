import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { DB_FILE } from '../../src/main/config/paths'
import { ensureReportZone } from '../../src/main/dashboard/rollup/report-build'
import { openDatabase } from '../../src/main/ledger/db'
import { MIGRATIONS } from '../../src/main/ledger/migrations'
import type { CallRecord } from '../../src/main/ledger/record'
import { pruneCalls } from '../../src/main/ledger/retention'
import { localParts } from '../../src/main/time/zone'
import { REPORT_KINDS, type Report, type ReportQuery, parseWhen } from '../../src/main/report/report'
import { dbs, expectSameReport, ledgerWith, rawReport, report, repriceEveryThird, tempDir } from './report-support'
import { makeCall, rng } from './seed'

const DAY = 86_400_000
const ZONES = ['UTC', 'Europe/Berlin', 'Asia/Kolkata', 'America/St_Johns']

function calls(now: number, n: number, days: number, seed = 5): CallRecord[] {
  const r = rng(seed)
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]
  const out: CallRecord[] = []
  for (let i = 0; i < n; i++) {
    out.push(
      makeCall({
        ts: now - Math.floor(r() * days * DAY),
        provider: pick(['openai', 'anthropic']),
        model: pick(['m-a', 'm-b', 'm-c', 'm-d']),
        tenant: pick(['', 'acme', 'globex']),
        agent: pick(['', 'codex', 'aider', 'claude-code']),
        session: pick(['', 's-1', 's-2', 's-3', 's-4', 's-5']),
        project: pick(['', '/src/a', '/src/b']),
        source: r() < 0.2 ? 'import' : 'proxy',
        billing: r() < 0.15 ? 'subscription' : 'api',
        input_tokens: Math.floor(r() * 9000),
        output_tokens: Math.floor(r() * 900),
        cache_read_tokens: Math.floor(r() * 500),
        cache_write_tokens: Math.floor(r() * 50),
        cost_usd: r() * 0.2,
      }),
    )
  }
  return out.sort((a, b) => a.ts - b.ts)
}

/**
 * The month rows are the sums of their day rows: each day row (its day's start read in `tz`)
 * summed per month, key for key, and nothing else.
 */
function expectMonthsAreTheirDays(db: Database.Database, tz: string): void {
  const monthOf = (ts: number) => {
    const p = localParts(ts, tz)
    return `${p.year}-${p.month}`
  }
  const id = (r: any, month: string) => [r.dim, month, r.tenant, r.key, r.model, r.provider].join('\0')
  const want = new Map<string, any>()
  for (const d of db.prepare('SELECT * FROM dash_report_day').all() as any[]) {
    const k = id(d, monthOf(d.day))
    const w = want.get(k)
    if (!w) want.set(k, { ...d })
    else {
      for (const c of ['requests', 'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'cost_usd', 'imported']) w[c] += d[c]
      if (d.agent > w.agent) w.agent = d.agent
      if (d.project > w.project) w.project = d.project
    }
  }
  const got = db.prepare('SELECT * FROM dash_report_month').all() as any[]
  expect(got.length).toBe(want.size)
  expect(got.length).toBeGreaterThan(0)
  for (const g of got) {
    // A month row's period is the local midnight that begins its month.
    const p = localParts(g.month, tz)
    expect([p.day, p.hour, p.minute], `month ${g.month}`).toEqual([1, 0, 0])
    const w = want.get(id(g, monthOf(g.month)))
    expect(w, `month row ${id(g, monthOf(g.month))}`).toBeDefined()
    const { day: _d, cost_usd: wc, ...wRest } = w
    const { month: _m, cost_usd: gc, ...gRest } = g
    expect(gRest).toEqual(wRest)
    expect(Math.abs(gc - wc)).toBeLessThanOrEqual(1e-9 * Math.max(1, Math.abs(wc)))
  }
}

/** The rows across tenants are the sums of the rows of every tenant, in both tables. */
function expectAcrossTenantsAreTheirSums(db: Database.Database): void {
  for (const [table, col] of [['dash_report_day', 'day'], ['dash_report_month', 'month']]) {
    const sums = (where: string) =>
      db.prepare(`SELECT substr(dim, 1 + (dim LIKE '*%')) AS d, ${col} AS p, key, model, provider, sum(requests) AS n, sum(input_tokens) AS i,
                         sum(output_tokens) AS o, sum(cache_read_tokens) AS cr, sum(cache_write_tokens) AS cw, sum(imported) AS im, total(cost_usd) AS c
                    FROM ${table} WHERE ${where} GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5`).all() as any[]
    const across = sums(`dim LIKE '*%' AND tenant = ''`)
    const tenants = sums(`dim IN ('', 'agent', 'project')`)
    expect(across.length).toBeGreaterThan(0)
    expect(across.map(({ c: _, ...r }) => r)).toEqual(tenants.map(({ c: _, ...r }) => r))
    for (const [i, t] of tenants.entries()) expect(Math.abs(across[i].c - t.c)).toBeLessThanOrEqual(1e-9 * Math.max(1, Math.abs(t.c)))
  }
  expect(db.prepare(`SELECT DISTINCT dim FROM dash_report_day ORDER BY dim`).pluck().all()).toEqual(['', '*', '*agent', '*project', 'agent', 'project', 'session'])
}

describe('report from the report rollup', () => {
  it('gives the same answer as summing the calls, for every kind, zone, window and tenant', async () => {
    const now = Date.UTC(2026, 10, 23, 10, 7)
    for (const tz of ZONES) {
      const db = ledgerWith(calls(now, 2500, 75, tz.length), tz)
      expectMonthsAreTheirDays(db, tz)
      expectAcrossTenantsAreTheirSums(db)
      const windows: [number | null, number | null][] = [
        [null, null],
        [parseWhen('2026-10-01', tz), null],
        [parseWhen('2026-09-20', tz), parseWhen('2026-10-15', tz, true)],
        // Whole months with days before and after them: months from the month rows, the rest from the days.
        [parseWhen('2026-09-03', tz), parseWhen('2026-11-02', tz, true)],
        [parseWhen('2026-09-01', tz), parseWhen('2026-10-31', tz, true)],
        // ISO times in the middle of days: partial days at both edges are read from calls.
        [Date.UTC(2026, 8, 30, 13, 41), Date.UTC(2026, 9, 29, 2, 3)],
        [Date.UTC(2026, 9, 10, 3), Date.UTC(2026, 9, 10, 9)],
      ]
      for (const kind of REPORT_KINDS) {
        for (const [since, until] of windows) {
          for (const tenant of [null, 'acme']) {
            const q: ReportQuery = { kind, since, until, tenant, timezone: tz }
            expectSameReport(await report(db, q), await rawReport(db, q), `${tz} ${kind} ${since}-${until} ${tenant}`)
          }
        }
      }
    }
  })

  it('still answers for days whose raw calls retention pruned', async () => {
    const now = Date.now()
    const tz = 'Europe/Berlin'
    const db = ledgerWith(calls(now, 3000, 200, 9), tz)
    const before = await Promise.all(REPORT_KINDS.map((kind) => report(db, { kind, since: null, until: null, tenant: null, timezone: tz })))
    while (pruneCalls(db, now - 40 * DAY, 500) > 0);
    // Pruned but for the calls of sessions still in use (a session cap counts them): those older
    // calls stay beside the rollups that count them too, and no report counts them twice.
    expect(db.prepare("SELECT min(ts) FROM calls WHERE session = ''").pluck().get()).toBeGreaterThanOrEqual(now - 40 * DAY)
    expect(db.prepare("SELECT count(*) FROM calls WHERE session <> '' AND ts < ?").pluck().get(now - 40 * DAY)).toBeGreaterThan(0)
    for (const [i, kind] of REPORT_KINDS.entries()) {
      expectSameReport(await report(db, { kind, since: null, until: null, tenant: null, timezone: tz }), before[i], kind)
    }
    // Another zone: the kept days are rebuilt in it, the pruned ones keep theirs, and the months
    // are rebuilt from both, each day into the month its start falls in.
    ensureReportZone(db, 'America/St_Johns')
    expectMonthsAreTheirDays(db, 'America/St_Johns')
    expectAcrossTenantsAreTheirSums(db)
  })

  it('is rebuilt for a new zone, and the CLI (another zone) falls back to the calls', async () => {
    const now = Date.UTC(2026, 10, 23, 10, 7)
    const db = ledgerWith(calls(now, 1500, 30, 3), 'UTC')
    expect(ensureReportZone(db, 'Asia/Kolkata')).toBe(1500)
    expect(ensureReportZone(db, 'Asia/Kolkata')).toBe(0)
    expectMonthsAreTheirDays(db, 'Asia/Kolkata')
    expectAcrossTenantsAreTheirSums(db)
    for (const tz of ['Asia/Kolkata', 'America/New_York']) {
      for (const kind of REPORT_KINDS) {
        const q: ReportQuery = { kind, since: null, until: null, tenant: null, timezone: tz }
        expectSameReport(await report(db, q), await rawReport(db, q), `${tz} ${kind}`)
      }
    }
  })

  it('re-pricing moves the report and the per-project costs with the calls', async () => {
    const now = Date.UTC(2026, 10, 23, 10, 7)
    const tz = 'Europe/Berlin'
    const db = ledgerWith(calls(now, 800, 20, 4), tz)
    await repriceEveryThird(db)
    for (const kind of REPORT_KINDS) {
      const q: ReportQuery = { kind, since: null, until: null, tenant: null, timezone: tz }
      expectSameReport(await report(db, q), await rawReport(db, q), kind)
    }
    expectMonthsAreTheirDays(db, tz)
    expectAcrossTenantsAreTheirSums(db)
    const money = "CASE WHEN billing = 'subscription' THEN 0 ELSE cost_usd END"
    const want = db.prepare(`SELECT project k, total(${money}) c FROM calls GROUP BY project ORDER BY project`).all() as any[]
    for (const table of ['dash_dim_hour', 'dash_dim_day']) {
      const got = db.prepare(`SELECT key k, total(cost_usd) c FROM ${table} WHERE dim = 'project' GROUP BY key ORDER BY key`).all() as any[]
      expect(got.map((g) => g.k)).toEqual(want.map((w) => w.k))
      for (const [i, w] of want.entries()) expect(got[i].c).toBeCloseTo(w.c, 9)
    }
  })

  it('reads whole months from the month rows and the days around them from the day rows', async () => {
    const now = Date.UTC(2026, 10, 23, 10, 7)
    const tz = 'Europe/Berlin'
    const db = ledgerWith(calls(now, 1200, 90, 6), tz)
    const window = { since: parseWhen('2026-09-12', tz), until: parseWhen('2026-11-03', tz, true), tenant: null, timezone: tz }
    // Change October's month rows only: the rows of a report that reads them move by exactly that
    // much; daily reads days and does not move, and neither do the totals (of the day rows for
    // every kind, so they agree to the last digit). Every tenant's report reads the rows across
    // tenants, one tenant's its own.
    const october = parseWhen('2026-10-01', tz)
    const rowRequests = (r: Report) => r.rows.reduce((n, row) => n + row.requests, 0)
    for (const [tenant, dim] of [[null, '*'], ['acme', '']] as const) {
      const before = await report(db, { kind: 'model', ...window, tenant })
      const tenantIs = tenant === null ? "tenant = ''" : 'tenant = @tenant'
      const changed = db.prepare(`UPDATE dash_report_month SET requests = requests + 1000 WHERE dim = @dim AND ${tenantIs} AND month = @october`).run({ dim, tenant, october }).changes
      expect(changed).toBeGreaterThan(0)
      const after = await report(db, { kind: 'model', ...window, tenant })
      expect(rowRequests(after)).toBe(rowRequests(before) + 1000 * changed)
      expect(after.totals).toEqual(before.totals)
      expect((await report(db, { kind: 'daily', ...window, tenant })).totals.requests).toBe(before.totals.requests)
    }
    // A window without a whole month reads only days.
    const inside = { since: parseWhen('2026-10-02', tz), until: parseWhen('2026-10-30', tz, true), tenant: null, timezone: tz }
    expectSameReport(await report(db, { kind: 'agent', ...inside }), await rawReport(db, { kind: 'agent', ...inside }), 'inside October')
  })

  it('an existing ledger gets its months from its days when it is upgraded', async () => {
    const now = Date.UTC(2026, 10, 23, 10, 7)
    const tz = 'Asia/Kolkata'
    const dir = tempDir()
    const file = join(dir, DB_FILE)
    const db = ledgerWith(calls(now, 1500, 100, 8), tz)
    // The same ledger as the release before this table had it: no month rows, schema 12.
    await db.backup(file)
    const old = openDatabase(file)
    old.exec(`DROP TABLE dash_report_session; DROP INDEX dash_report_day_session; DROP TABLE dash_report_month; DELETE FROM dash_report_day WHERE dim LIKE '*%'`)
    old.pragma('user_version = 12')
    old.close()
    const upgraded = openDatabase(file)
    dbs.push(upgraded)
    expect(upgraded.pragma('user_version', { simple: true })).toBe(MIGRATIONS[MIGRATIONS.length - 1].version)
    expectMonthsAreTheirDays(upgraded, tz)
    expectAcrossTenantsAreTheirSums(upgraded)
    for (const kind of REPORT_KINDS) {
      const q: ReportQuery = { kind, since: null, until: null, tenant: null, timezone: tz }
      expectSameReport(await report(upgraded, q), await rawReport(upgraded, q), `upgraded ${kind}`)
    }
  })
})
