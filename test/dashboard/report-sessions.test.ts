import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { DB_FILE } from '../../src/main/config/paths'
import { ensureReportZone } from '../../src/main/dashboard/rollup/report-build'
import { openDatabase } from '../../src/main/ledger/db'
import { MIGRATIONS } from '../../src/main/ledger/migrations'
import type { CallRecord } from '../../src/main/ledger/record'
import { pruneCalls } from '../../src/main/ledger/retention'
import { type Report, type ReportQuery, parseWhen } from '../../src/main/report/report'
import { dbs, ledgerWith, rawReport, report, repriceEveryThird, tempDir } from './report-support'
import { makeCall, rng } from './seed'

const DAY = 86_400_000
const HOUR = 3_600_000
const NOW = Date.UTC(2026, 10, 23, 10, 7)

/**
 * Calls of `sessions` sessions over `days` days: most last minutes to hours, some run for days
 * (so they cross the ends of windows), a few ids are used by two tenants, and calls without a
 * session come all the time. Costs vary by the session, so some sessions cost far more.
 */
function sessionCalls(n: number, sessions: number, days: number, seed: number): CallRecord[] {
  const r = rng(seed)
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]
  const spans = Array.from({ length: sessions }, (_, i) => {
    const long = r() < 0.08
    const length = long ? (1 + r() * 9) * DAY : r() * 5 * HOUR
    return {
      id: i === 0 ? '' : `s-${i % Math.floor(sessions * 0.97)}`,
      tenant: pick(['', 'acme', 'globex']),
      start: NOW - Math.floor(r() * days * DAY),
      length: i === 0 ? 0 : length,
      scale: r() < 0.1 ? 5 : r(),
    }
  })
  const out: CallRecord[] = []
  for (let i = 0; i < n; i++) {
    const s = pick(spans)
    const ts = s.id === '' ? NOW - Math.floor(r() * days * DAY) : Math.min(NOW + DAY, s.start + Math.floor(r() * s.length))
    out.push(
      makeCall({
        ts,
        provider: pick(['openai', 'anthropic']),
        model: pick(['m-a', 'm-b', 'm-c']),
        tenant: s.tenant,
        agent: pick(['codex', 'aider']),
        session: s.id,
        project: pick(['/src/a', '/src/b']),
        source: r() < 0.2 ? 'import' : 'proxy',
        billing: r() < 0.15 ? 'subscription' : 'api',
        input_tokens: Math.floor(r() * 9000),
        output_tokens: Math.floor(r() * 900),
        cache_read_tokens: Math.floor(r() * 500),
        cache_write_tokens: Math.floor(r() * 50),
        cost_usd: r() * 0.2 * s.scale,
      }),
    )
  }
  return out.sort((a, b) => a.ts - b.ts)
}

const close = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b))

/** A report cut to `limit` rows is the full report's first `limit` rows, with every row's count and the same totals. */
function expectFirstRows(got: Report, full: Report, limit: number, what: string): void {
  const want = full.rows.slice(0, limit)
  expect(got.rows.map((r) => r.key), what).toEqual(want.map((r) => r.key))
  for (const [i, w] of want.entries()) {
    const { cost_usd: gc, ...g } = got.rows[i]
    const { cost_usd: wc, ...rest } = w
    expect(g, `${what} ${w.key}`).toEqual(rest)
    expect(close(gc, wc), `${what} ${w.key} cost ${gc} vs ${wc}`).toBe(true)
  }
  expect(got.total_rows, what).toBe(full.rows.length)
  expect({ ...got.totals, cost_usd: 0 }, what).toEqual({ ...full.totals, cost_usd: 0 })
  expect(close(got.totals.cost_usd, full.totals.cost_usd), what).toBe(true)
}

/**
 * The session totals against the calls: per tenant and session, and per session across tenants,
 * the first and last call's times (or wider, where `wide` allows) and the summed cost.
 */
function expectSessionTotals(db: Database.Database, wide = false): void {
  for (const [across, by] of [[0, 'tenant, session'], [1, "'' AS tenant, session"]] as const) {
    const want = db
      .prepare(`SELECT ${by}, min(ts) AS f, max(ts) AS l, total(cost_usd) AS c FROM calls GROUP BY 1, 2 ORDER BY 1, 2`)
      .all() as any[]
    const got = db
      .prepare('SELECT tenant, session, first_ts AS f, last_ts AS l, cost_usd AS c FROM dash_report_session WHERE across = ? ORDER BY tenant, session')
      .all(across) as any[]
    expect(got.map((g) => [g.tenant, g.session]), `across ${across}`).toEqual(want.map((w) => [w.tenant, w.session]))
    for (const [i, w] of want.entries()) {
      const g = got[i]
      if (wide) {
        expect(g.f).toBeLessThanOrEqual(w.f)
        expect(g.l).toBeGreaterThanOrEqual(w.l)
      } else expect([g.f, g.l], `${w.tenant} ${w.session}`).toEqual([w.f, w.l])
      expect(close(g.c, w.c), `${w.tenant} ${w.session} cost ${g.c} vs ${w.c}`).toBe(true)
    }
  }
}

describe('session report with a limit', () => {
  it("lists the full report's costliest sessions, for every zone, window and tenant, and counts them all", async () => {
    for (const tz of ['UTC', 'Europe/Berlin', 'Asia/Kolkata']) {
      const db = ledgerWith(sessionCalls(3000, 320, 70, tz.length), tz)
      expectSessionTotals(db)
      const windows: [number | null, number | null][] = [
        [null, null],
        [parseWhen('2026-10-20', tz), null],
        [parseWhen('2026-09-25', tz), parseWhen('2026-10-31', tz, true)],
        // Narrow: a few days of the ledger's months.
        [parseWhen('2026-10-10', tz), parseWhen('2026-10-12', tz, true)],
        // ISO times inside days: the partial days at both ends come from calls.
        [Date.UTC(2026, 8, 30, 13, 41), Date.UTC(2026, 9, 29, 2, 3)],
        // No whole day: summed from calls.
        [Date.UTC(2026, 9, 10, 3), Date.UTC(2026, 9, 10, 9)],
      ]
      for (const [since, until] of windows) {
        for (const tenant of [null, 'acme']) {
          const q: ReportQuery = { kind: 'session', since, until, tenant, timezone: tz }
          const full = await rawReport(db, q)
          expect(full.total_rows).toBe(full.rows.length)
          // (1000: every session a candidate; above it, the full report cut.)
          for (const limit of [1, 5, 40, 1000, 100_000]) {
            expectFirstRows(await report(db, { ...q, limit }), full, limit, `${tz} ${since}-${until} ${tenant} limit ${limit}`)
          }
        }
      }
    }
  })

  it('finds them from the session totals, not by summing every session', async () => {
    const tz = 'Europe/Berlin'
    const db = ledgerWith(sessionCalls(1500, 200, 40, 11), tz)
    const q: ReportQuery = { kind: 'session', since: null, until: null, tenant: null, timezone: tz, limit: 1 }
    const top = (await report(db, q)).rows[0]
    // Rank the costliest session last in its totals: a report that reads them lists the next one;
    // its figures still come from the day and month rows.
    db.prepare('UPDATE dash_report_session SET cost_usd = -1 WHERE across = 1 AND session = ?').run(top.key)
    const got = await report(db, q)
    const full = await rawReport(db, { ...q, limit: null })
    expect(got.rows[0].key).not.toBe(top.key)
    expect(got.rows[0]).toEqual(full.rows[1])
  })

  it('keeps the session totals through re-pricing and a change of zone', async () => {
    const tz = 'Europe/Berlin'
    const db = ledgerWith(sessionCalls(1200, 150, 30, 4), tz)
    await repriceEveryThird(db)
    expectSessionTotals(db)
    // The days are rebuilt for the new zone; the session totals (which have no zone) stay as they are.
    expect(ensureReportZone(db, 'Asia/Kolkata')).toBe(1200)
    expectSessionTotals(db)
    const q: ReportQuery = { kind: 'session', since: parseWhen('2026-11-01', 'Asia/Kolkata'), until: null, tenant: null, timezone: 'Asia/Kolkata' }
    expectFirstRows(await report(db, { ...q, limit: 10 }), await rawReport(db, q), 10, 'after the zone change')
  })

  it('are built with the days when the report rollup is built the first time, over calls it never saw', async () => {
    const db = ledgerWith(sessionCalls(900, 120, 30, 2), null)
    expect(db.prepare('SELECT count(*) FROM dash_report_session').pluck().get()).toBe(0)
    expect(ensureReportZone(db, 'UTC')).toBe(900)
    expectSessionTotals(db)
    const q: ReportQuery = { kind: 'session', since: parseWhen('2026-11-05', 'UTC'), until: null, tenant: 'acme', timezone: 'UTC' }
    expectFirstRows(await report(db, { ...q, limit: 3 }), await rawReport(db, q), 3, 'built over existing calls')
  })

  it('an existing ledger gets its session totals when it is upgraded, from its days where its calls were pruned', async () => {
    const tz = 'Asia/Kolkata'
    const db = ledgerWith(sessionCalls(2000, 250, 90, 8), tz)
    while (pruneCalls(db, NOW - 30 * DAY, 500) > 0);
    const file = join(tempDir(), DB_FILE)
    await db.backup(file)
    const old = openDatabase(file)
    // The same ledger as the release before: no session totals; and one session the dashboard
    // rollup does not know the calls of (its times then come from its days).
    const before = old.prepare('SELECT * FROM dash_report_session WHERE across = 0 ORDER BY tenant, session').all() as any[]
    const blind = before.find((s) => s.session !== '' && s.first_ts < NOW - 30 * DAY)
    expect(blind).toBeDefined()
    old.exec('DROP TABLE dash_report_session; DROP INDEX dash_report_day_session; DROP INDEX dash_report_month_session')
    old.prepare('DELETE FROM dash_session WHERE tenant = ? AND session = ?').run(blind.tenant, blind.session)
    old.pragma('user_version = 13')
    old.close()
    const upgraded = openDatabase(file)
    dbs.push(upgraded)
    expect(upgraded.pragma('user_version', { simple: true })).toBe(MIGRATIONS[MIGRATIONS.length - 1].version)
    const after = upgraded.prepare('SELECT * FROM dash_report_session WHERE across = 0 ORDER BY tenant, session').all() as any[]
    expect(after.map((s) => [s.tenant, s.session])).toEqual(before.map((s) => [s.tenant, s.session]))
    for (const [i, b] of before.entries()) {
      const a = after[i]
      expect(close(a.cost_usd, b.cost_usd), `${b.session} cost`).toBe(true)
      if (b.session === '' || b.session === blind.session) {
        // Bounded by its days: from its first day's start to two days after its last day's.
        expect(a.first_ts).toBeLessThanOrEqual(b.first_ts)
        expect(a.last_ts).toBeGreaterThanOrEqual(b.last_ts)
        expect(a.last_ts - b.last_ts).toBeLessThan(2 * DAY)
      } else expect([a.first_ts, a.last_ts], b.session).toEqual([b.first_ts, b.last_ts])
    }
    expect(upgraded.prepare('SELECT count(*) FROM dash_report_session WHERE across = 1').pluck().get()).toBe(
      upgraded.prepare('SELECT count(DISTINCT session) FROM dash_report_session WHERE across = 0').pluck().get(),
    )
    for (const since of [null, parseWhen('2026-10-01', tz), parseWhen('2026-11-10', tz)]) {
      for (const tenant of [null, 'globex']) {
        const q: ReportQuery = { kind: 'session', since, until: null, tenant, timezone: tz }
        // The pruned days count through the rollup: the full report from it is the reference.
        expectFirstRows(await report(upgraded, { ...q, limit: 7 }), await report(upgraded, q), 7, `upgraded ${since} ${tenant}`)
      }
    }
  })
})
