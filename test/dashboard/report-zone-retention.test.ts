import { describe, expect, it } from 'vitest'
import { ensureReportZone } from '../../src/main/dashboard/rollup/report-build'
import { pruneCalls } from '../../src/main/ledger/retention'
import { ledgerWith, report, repriceEveryThird } from './report-support'
import { makeCall } from './seed'

const HOUR = 3_600_000
const DAY = 24 * HOUR

/**
 * A change of `timezone` rebuilds the report's days from the calls kept. Retention prunes up to
 * any instant, not a midnight, so the oldest day kept may have lost calls that only its row
 * still counts: that row stays, and the rebuild starts at the next midnight. It used to be
 * deleted and rebuilt from the calls kept, losing the pruned part of that day for good.
 */
describe('the report after a timezone change, with part of a day pruned', () => {
  // One $1 call an hour for three UTC days.
  const day0 = Date.UTC(2026, 2, 10)
  const calls = () => Array.from({ length: 72 }, (_, h) => makeCall({ ts: day0 + h * HOUR + 60_000, cost_usd: 1, billing: 'api' }))
  const q = { kind: 'daily' as const, since: null, until: null, tenant: null, timezone: 'UTC' }

  it('keeps every dollar: the pruned half day in its old row, the rest in the new zone\'s days, none twice', async () => {
    const db = ledgerWith(calls(), 'UTC')
    expect((await report(db, q)).totals.cost_usd).toBe(72)
    // Retention prunes up to noon of the second day.
    while (pruneCalls(db, day0 + DAY + 12 * HOUR, 500) > 0);
    expect((await report(db, q)).totals.cost_usd).toBe(72)
    ensureReportZone(db, 'Europe/Berlin')
    const berlin = await report(db, { ...q, timezone: 'Europe/Berlin' })
    expect(berlin.totals.cost_usd).toBe(72)
    expect(berlin.totals.requests).toBe(72)
  })

  it("keeps the pruned days after an old call retention kept behind (the newest recorded, or the last re-priced): the rebuild starts where retention keeps every call", async () => {
    // The last call recorded is an old one (an import of old log entries, say): retention never prunes the newest.
    const db = ledgerWith([...calls(), makeCall({ ts: day0 + 30 * 60_000, cost_usd: 1, billing: 'api' })], 'UTC')
    expect((await report(db, q)).totals.cost_usd).toBe(73)
    while (pruneCalls(db, day0 + 2 * DAY + 12 * HOUR, 500) > 0);
    expect(db.prepare('SELECT count(*) FROM calls WHERE ts < ?').pluck().get(day0 + DAY)).toBe(1)
    expect((await report(db, q)).totals.cost_usd).toBe(73)
    ensureReportZone(db, 'Europe/Berlin')
    const berlin = await report(db, { ...q, timezone: 'Europe/Berlin' })
    expect(berlin.totals).toMatchObject({ cost_usd: 73, requests: 73 })
  })

  it('with nothing pruned, the oldest day is rebuilt in the new zone too', async () => {
    const db = ledgerWith(calls(), 'UTC')
    ensureReportZone(db, 'Europe/Berlin')
    const berlin = await report(db, { ...q, timezone: 'Europe/Berlin' })
    expect(berlin.totals.cost_usd).toBe(72)
    // Berlin's first day (from 23:00 UTC the day before) holds the first 23 hours' calls.
    const first = db.prepare(`SELECT day, requests FROM dash_report_day WHERE dim = '' ORDER BY day LIMIT 1`).get() as { day: number; requests: number }
    expect(first).toEqual({ day: day0 - HOUR, requests: 23 })
  })

  // A second change found the rows kept from the first zone by the second zone's midnight, which
  // none of them is keyed at: west of the first, it rebuilt calls those rows still counted (84
  // calls for 72); east, it deleted rows of pruned calls ($60 for $72).
  it.each([
    ['west', 'Europe/Berlin', 'America/New_York'],
    ['east', 'America/New_York', 'Asia/Tokyo'],
    ['back', 'Asia/Tokyo', 'UTC'],
  ])('keeps every dollar through a second change of zone (%s)', async (_, first, second) => {
    const db = ledgerWith(calls(), 'UTC')
    while (pruneCalls(db, day0 + DAY + 12 * HOUR, 500) > 0);
    ensureReportZone(db, first)
    expect((await report(db, { ...q, timezone: first })).totals).toMatchObject({ cost_usd: 72, requests: 72 })
    ensureReportZone(db, second)
    for (const kind of ['daily', 'monthly'] as const) {
      expect((await report(db, { ...q, kind, timezone: second })).totals, kind).toMatchObject({ cost_usd: 72, requests: 72 })
    }
    // And a third, after more calls were pruned.
    while (pruneCalls(db, day0 + 2 * DAY + 3 * HOUR, 500) > 0);
    ensureReportZone(db, 'Australia/Adelaide')
    expect((await report(db, { ...q, timezone: 'Australia/Adelaide' })).totals).toMatchObject({ cost_usd: 72, requests: 72 })
  })

  it('re-pricing after a change of zone moves the daily report as much as the monthly one', async () => {
    const db = ledgerWith(calls(), 'UTC')
    while (pruneCalls(db, day0 + DAY + 12 * HOUR, 500) > 0);
    ensureReportZone(db, 'Asia/Tokyo')
    await repriceEveryThird(db)
    const kept = db.prepare('SELECT total(cost_usd) FROM calls').pluck().get() as number
    const pruned = 36
    const daily = await report(db, { ...q, timezone: 'Asia/Tokyo' })
    const monthly = await report(db, { ...q, kind: 'monthly', timezone: 'Asia/Tokyo' })
    expect(daily.totals.cost_usd).toBeCloseTo(pruned + kept, 9)
    expect(monthly.totals.cost_usd).toBeCloseTo(pruned + kept, 9)
    // Every day row moved with its calls (a report of days inside a month reads them).
    const days = db.prepare(`SELECT total(cost_usd) FROM dash_report_day WHERE dim = ''`).pluck().get() as number
    expect(days).toBeCloseTo(pruned + kept, 9)
  })
})
