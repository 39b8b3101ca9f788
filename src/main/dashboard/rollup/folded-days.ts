import type { SqlStore } from '../../storage/sql'
import { DayOf, MonthOf, parseZones } from './report'

/** What a call's report rows are keyed by besides its day. */
export interface FoldedCall {
  ts: number
  tenant: string
  model: string
  provider: string
  /** Its request change: -1 (superseded) wants a row that counts a call; +1 (joining rows: re-classed) is where the folder puts it now. */
  requests?: number
}

/** A day start in any zone is at most 25 hours (a day with an hour more) and an hour (a midnight keyed early) before a call it holds. */
const DAY_REACH = 26 * 3_600_000

/**
 * The days and months of the SQLite report rollup (kept in one zone) as re-pricing and a supersede
 * find a call's rows: where the folder puts it now (its zone stretch, see DayOf), or, when no row
 * is there, where an earlier release put it. A ledger whose zone changed under a release before
 * schema 26 kept the rows of a partly pruned day in the earlier zone and recorded no stretch of
 * them (and releases before migration 18 keyed a skipped midnight's day an hour early), so a call
 * of that day is counted by a row the current zone does not key: the latest row of its tenant,
 * model and provider that starts at most DAY_REACH before it (one that counts a call, when the
 * change takes one away) is the one that counted it. Moving a row the call is not in would show a
 * day at -1 request and minus its cost beside a day that still counts it.
 */
export class FoldedDays {
  /** Whether the day the zone gives has the row (that counts a call), per day, tenant, model and provider. */
  private readonly found = new Map<string, boolean>()

  private constructor(
    private readonly tx: SqlStore,
    private readonly day: DayOf,
    private readonly month: MonthOf,
  ) {}

  /** The rollup's days, or null where there is none (PostgreSQL, or not built). */
  static async of(tx: SqlStore): Promise<FoldedDays | null> {
    if (tx.dialect !== 'sqlite') return null
    const has = await tx.get<{ n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE name = 'dash_report_state'")
    if (!has?.n) return null
    // Each call's row where it was folded: a day kept in an earlier zone, or the first rebuilt day's start (ZoneSpan).
    const zones = await tx.get<{ n: number }>("SELECT count(*) AS n FROM pragma_table_info('dash_report_state') WHERE name = 'zones'")
    const row = await tx.get<{ tz: string | null; zones: string | null }>(`SELECT tz, ${zones?.n ? 'zones' : 'NULL AS zones'} FROM dash_report_state WHERE id = 1`)
    return row?.tz ? new FoldedDays(tx, new DayOf(row.tz, parseZones(row.zones)), new MonthOf(row.tz)) : null
  }

  /** The day of the rows call `c` is counted in (its '' row: the folder writes all of a call's rows on one day). */
  async dayOf(c: FoldedCall): Promise<number> {
    const day = this.day.of(c.ts)
    // A call joining rows (re-classed) goes where the folder puts it now, as a fresh fold would:
    // a row of that grouping an earlier day holds is another call's, not where it was counted.
    if ((c.requests ?? 0) > 0) return day
    const counting = (c.requests ?? 0) < 0
    const keys = { tenant: c.tenant, model: c.model, provider: c.provider }
    const id = `${day}\0${c.tenant}\0${c.model}\0${c.provider}\0${counting}`
    let there = this.found.get(id)
    if (there === undefined) {
      const row = await this.tx.get<{ requests: number }>(
        "SELECT requests FROM dash_report_day WHERE dim = '' AND day = @day AND tenant = @tenant AND key = '' AND model = @model AND provider = @provider",
        { day, ...keys },
      )
      there = row !== undefined && (!counting || row.requests > 0)
      this.found.set(id, there)
    }
    if (there) return day
    const kept = await this.tx.get<{ day: number | null }>(
      `SELECT max(day) AS day FROM dash_report_day
        WHERE dim = '' AND tenant = @tenant AND key = '' AND model = @model AND provider = @provider
          AND day <= @ts AND day > @from${counting ? ' AND requests > 0' : ''}`,
      { ...keys, ts: c.ts, from: c.ts - DAY_REACH },
    )
    return kept?.day ?? day
  }

  /** The month row of a day row (as rebuildReportMonths and the folder key it). */
  monthOf(day: number): number {
    return this.month.of(day)
  }
}
