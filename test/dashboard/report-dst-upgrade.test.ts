import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { DB_FILE } from '../../src/main/config/paths'
import { openDatabase } from '../../src/main/ledger/db'
import { MIGRATIONS } from '../../src/main/ledger/migrations'
import { ensureReportZone } from '../../src/main/dashboard/rollup/report-build'
import { type ReportQuery } from '../../src/main/report/report'
import { dbs, expectSameReport, ledgerWith, rawReport, report, tempDir } from './report-support'
import { makeCall } from './seed'

const TZ = 'America/Santiago'
const at = (s: string) => Date.parse(s)

describe('report rollup: days whose midnight does not exist, kept by an earlier release', () => {
  it('when the ledger is upgraded, their rows move from 23:00 the day before to their true start, 01:00; others stay', async () => {
    const calls = [
      ['2026-09-05T16:00:00Z', 1], // 5th 12:00 (-04)
      ['2026-09-06T03:30:00Z', 2], // 5th 23:30 (-04)
      ['2026-09-06T04:30:00Z', 4], // 6th 01:30 (-03)
      ['2026-09-06T15:00:00Z', 8], // 6th 12:00
      ['2026-09-07T15:00:00Z', 16], // 7th
    ].map(([t, cost], i) => makeCall({ ts: at(t as string), cost_usd: cost as number, tenant: i % 2 ? 'acme' : '', agent: i % 3 ? 'codex' : '' }))
    const db = ledgerWith(calls, TZ)
    const file = join(tempDir(), DB_FILE)
    await db.backup(file)
    // The same ledger as the release before: the 6th's rows keyed at 03:00Z (23:00 on the 5th),
    // and a day row kept from another zone (pruned days keep theirs), at Berlin's midnight.
    const old = openDatabase(file)
    const trueStart = at('2026-09-06T04:00:00Z')
    const moved = old.prepare('UPDATE dash_report_day SET day = ? WHERE day = ?').run(at('2026-09-06T03:00:00Z'), trueStart).changes
    expect(moved).toBeGreaterThan(0)
    const foreign = at('2026-08-01T22:00:00Z')
    old.prepare(`INSERT INTO dash_report_day (dim, day, tenant, key, model, provider, agent, project, requests, input_tokens, output_tokens,
                   cache_read_tokens, cache_write_tokens, cost_usd, imported) VALUES ('', ?, 'old', '', 'm', 'openai', '', '', 1, 0, 0, 0, 0, 0.5, 0)`).run(foreign)
    // A ledger of the release before: its schema before the migration that repairs such days.
    old.pragma('user_version = 17')
    old.close()

    // Opening it migrates it (the server, the CLI, the desktop app alike).
    const upgraded = openDatabase(file)
    dbs.push(upgraded)
    expect(upgraded.pragma('user_version', { simple: true })).toBe(MIGRATIONS.at(-1)!.version)
    expect(ensureReportZone(upgraded, TZ)).toBe(0) // what the server does at start-up: the zone is the same
    expect(upgraded.prepare('SELECT count(*) FROM dash_report_day WHERE day = ?').pluck().get(trueStart)).toBe(moved)
    expect(upgraded.prepare('SELECT count(*) FROM dash_report_day WHERE day = ?').pluck().get(at('2026-09-06T03:00:00Z'))).toBe(0)
    expect(upgraded.prepare('SELECT count(*) FROM dash_report_day WHERE day = ?').pluck().get(foreign)).toBe(1)
    const q: ReportQuery = { kind: 'daily', since: at('2026-09-05T04:00:00Z'), until: at('2026-09-08T03:00:00Z'), tenant: null, timezone: TZ }
    const daily = await report(upgraded, q)
    expect(daily.rows.map((r) => [r.key, r.requests, r.cost_usd])).toEqual([
      ['2026-09-05', 2, 3],
      ['2026-09-06', 2, 12],
      ['2026-09-07', 1, 16],
    ])
    // Done once: a second start-up finds nothing to move.
    const rows = upgraded.prepare('SELECT * FROM dash_report_day ORDER BY dim, day, tenant, key, model, provider').all()
    ensureReportZone(upgraded, TZ)
    expect(upgraded.prepare('SELECT * FROM dash_report_day ORDER BY dim, day, tenant, key, model, provider').all()).toEqual(rows)
    for (const kind of ['daily', 'monthly', 'agent'] as const) {
      for (const tenant of [null, 'acme']) {
        const w: ReportQuery = { ...q, kind, tenant, since: at('2026-08-01T04:00:00Z'), until: at('2026-10-01T03:00:00Z') }
        expectSameReport(await report(upgraded, w), await rawReport(upgraded, w), `${kind} ${tenant}`)
      }
    }
  })
})
