import type Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { ensureReportZone } from '../../src/main/dashboard/rollup/report-build'
import { pruneCalls } from '../../src/main/ledger/retention'
import { REPORT_KINDS } from '../../src/main/report/types'
import { ledgerWith, report, repriceEveryThird } from './report-support'
import { makeCall } from './seed'

const HOUR = 3_600_000
const sumMoney = (xs: number[]) => xs.reduce((a, b) => a + b, 0)
const DAY = 24 * HOUR

/**
 * The report rollup through changes of `timezone` while retention prunes the oldest calls at any
 * instant (so the oldest day kept is part pruned, counted only by its row): whatever the zone
 * and however often it changed, and after re-pricing, the totals by day, by week, by month and by
 * attribute are the same number to the last digit, and that number is what the calls cost.
 */
describe('report totals through changes of zone with the oldest calls pruned', () => {
  // Five UTC days, a call every hour, of odd cents (sums of them are not exact in binary), over two models and agents.
  const day0 = Date.UTC(2026, 2, 28)
  const made = Array.from({ length: 5 * 24 }, (_, h) =>
    makeCall({
      ts: day0 + h * HOUR + 7 * 60_000, cost_usd: 0.1 + (h % 7) * 0.07, billing: 'api',
      model: h % 2 ? 'gpt-4o' : 'gpt-4o-mini', agent: h % 3 ? 'a' : 'b', session: `s${Math.floor(h / 5)}`,
    }),
  )
  const madeCost = sumMoney(made.map((c) => c.cost_usd))
  const q = { kind: 'daily' as const, since: null, until: null, tenant: null }

  /** Every kind's totals for the whole ledger in `tz`: all equal (to the last digit); returns them. */
  async function totalsAgree(db: Database.Database, tz: string) {
    const daily = (await report(db, { ...q, timezone: tz })).totals
    for (const kind of REPORT_KINDS) expect((await report(db, { ...q, kind, timezone: tz })).totals, `${kind} in ${tz}`).toEqual(daily)
    // The costliest sessions, found through the session totals.
    expect((await report(db, { ...q, kind: 'session', limit: 1, timezone: tz })).totals, `top session in ${tz}`).toEqual(daily)
    // The report read the rollup (built in tz), not calls: it counts the pruned ones too.
    expect(db.prepare('SELECT tz FROM dash_report_state').pluck().get()).toBe(tz)
    return daily
  }

  const prune = (db: Database.Database, before: number) => {
    while (pruneCalls(db, before, 500) > 0);
    expect(db.prepare('SELECT min(ts) FROM calls').pluck().get()).toBeGreaterThanOrEqual(before)
  }

  it.each([
    ['west, then west again', 'Europe/Berlin', 'America/New_York'],
    ['east, then east again', 'America/New_York', 'Asia/Tokyo'],
    ['west, then back east', 'America/Los_Angeles', 'Asia/Kolkata'],
  ])('keeps every call and dollar, once and twice: %s', async (_, first, second) => {
    const db = ledgerWith(made, 'UTC')
    expect(await totalsAgree(db, 'UTC')).toMatchObject({ requests: 120 })
    // Retention prunes to 13:00 UTC of the second day: that day's row is all that counts its morning.
    prune(db, day0 + DAY + 13 * HOUR)
    for (const tz of [first, second]) {
      ensureReportZone(db, tz)
      const t = await totalsAgree(db, tz)
      expect(t.requests).toBe(120)
      expect(t.cost_usd).toBeCloseTo(madeCost, 9)
    }
    // More pruned (into the days rebuilt in the second zone), then a third change, back to the first zone of all.
    prune(db, day0 + 3 * DAY + 17 * HOUR)
    expect((await totalsAgree(db, second)).requests).toBe(120)
    ensureReportZone(db, 'UTC')
    const back = await totalsAgree(db, 'UTC')
    expect(back.requests).toBe(120)
    expect(back.cost_usd).toBeCloseTo(madeCost, 9)
  })

  it.each([
    ['once', ['Asia/Tokyo']],
    ['twice', ['Europe/Berlin', 'America/New_York']],
    ['twice, east', ['America/New_York', 'Australia/Adelaide']],
  ])('a re-price after the zone changed %s moves the days as much as the months', async (_, zones) => {
    const db = ledgerWith(made, 'UTC')
    prune(db, day0 + DAY + 13 * HOUR)
    const prunedCost = sumMoney(made.filter((c) => c.ts < day0 + DAY + 13 * HOUR).map((c) => c.cost_usd))
    for (const tz of zones) ensureReportZone(db, tz)
    const tz = zones.at(-1)!
    await repriceEveryThird(db)
    const kept = sumMoney(db.prepare('SELECT cost_usd FROM calls').pluck().all() as number[])
    const t = await totalsAgree(db, tz)
    expect(t.requests).toBe(120)
    expect(t.cost_usd).toBeCloseTo(prunedCost + kept, 9)
    // Every day row moved with its calls, and each month is its days.
    const days = db.prepare(`SELECT total(cost_usd) FROM dash_report_day WHERE dim = ''`).pluck().get() as number
    const months = db.prepare(`SELECT total(cost_usd) FROM dash_report_month WHERE dim = ''`).pluck().get() as number
    expect(days).toBeCloseTo(prunedCost + kept, 9)
    expect(months).toBeCloseTo(days, 9)
  })

  it('a re-price whose call has no row where it is now keyed moves the row that counts it, so no dollar is dropped or put on another day', async () => {
    // A ledger whose rows were laid out by a release before the zone stretches were kept: after a
    // change of zone, the kept half day and the first rebuilt day are keyed where today's
    // reckoning of the calls' days does not look for them.
    const db = ledgerWith(made, 'UTC')
    prune(db, day0 + DAY + 13 * HOUR)
    const prunedCost = sumMoney(made.filter((c) => c.ts < day0 + DAY + 13 * HOUR).map((c) => c.cost_usd))
    ensureReportZone(db, 'Asia/Tokyo')
    db.prepare('UPDATE dash_report_state SET zones = NULL').run()
    const rows = db.prepare(`SELECT count(*) FROM dash_report_day WHERE dim = ''`).pluck().get() as number
    await repriceEveryThird(db)
    const kept = sumMoney(db.prepare('SELECT cost_usd FROM calls').pluck().all() as number[])
    const daily = (await report(db, { ...q, timezone: 'Asia/Tokyo' })).totals
    expect(daily.cost_usd).toBeCloseTo(prunedCost + kept, 9)
    // Each call's money moved in the row that counts the call (no row of money and no call written elsewhere).
    expect(db.prepare(`SELECT count(*) FROM dash_report_day WHERE dim = ''`).pluck().get()).toBe(rows)
    expect(db.prepare(`SELECT count(*) FROM dash_report_day WHERE requests <= 0 OR cost_usd < 0`).pluck().get()).toBe(0)
    expect(await totalsAgree(db, 'Asia/Tokyo')).toEqual(daily)
    expect(daily.requests).toBe(120)
  })
})
