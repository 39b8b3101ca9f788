import type Database from 'better-sqlite3'
import type { SqlReader } from '../storage/sql'
import type { CallRecord } from './record'
import { PeriodClock } from '../time/zone'
import { addLater, takeLater } from '../time/later'

interface Counter {
  dayStart: number
  /** The start of the next day: a call stamped from then on is a later day's (`laterDays`). */
  dayEnd: number
  day: number
  monthStart: number
  monthEnd: number
  month: number
  /**
   * The spend of calls stamped in a later day or month than the counter's (ahead of the clock: a
   * team member's running fast, an agent's log imported from such a machine), by that day's or
   * month's start: the day's or month's spend once the counter rolls into it.
   */
  laterDays: Map<number, number>
  laterMonths: Map<number, number>
}

const counter = (): Counter => ({ dayStart: 0, dayEnd: 0, day: 0, monthStart: 0, monthEnd: 0, month: 0, laterDays: new Map(), laterMonths: new Map() })

export interface Spend {
  day: number
  month: number
}

/**
 * Today's and this month's spend, per API key hash and in total, kept in memory in step with
 * the ledger so that budget checks and the tray read them in O(1) instead of scanning calls.
 * Counters roll over lazily when a read or write finds that its period has ended.
 */
export class SpendTracker {
  private readonly keys = new Map<string, Counter>()
  private readonly total: Counter = counter()
  readonly clock: PeriodClock
  /** Told after every change of the totals (the tray); none on a headless server. */
  private readonly watchers = new Set<() => void>()

  constructor(readonly tz: string) {
    this.clock = new PeriodClock(tz)
  }

  /**
   * The calls already stored are counted: read from the database (`load`, `loadStore`, `replace`).
   * Until then the totals hold only what this process recorded since it started (a PostgreSQL
   * ledger reads them once the database is ready, without holding up start-up).
   */
  get loaded(): boolean {
    return this.read
  }

  private read = false

  /**
   * `fn` runs after every change of the totals, whatever made it: a proxied call, calls stored
   * another way (imported, a batch's requests, another process's or instance's), a cost moved,
   * totals reloaded. Returns an unsubscribe function.
   */
  onChange(fn: () => void): () => void {
    this.watchers.add(fn)
    return () => this.watchers.delete(fn)
  }

  private changed(): void {
    for (const w of this.watchers) {
      try {
        w()
      } catch {
        // a watcher's failure is its own; the totals are right
      }
    }
  }

  /**
   * Rolls a counter on to `now`'s day and month. Never back: a read timed a moment before the day
   * it has rolled into (the budgets API's answer, timed before an await; the wall clock stepped
   * back across midnight) reads that day, where rolling back started the ended day again at $0
   * and the next call today's, its spend so far lost.
   */
  private roll(c: Counter, now: number): Counter {
    const d = this.clock.dayOf(now)
    const m = this.clock.monthOf(now)
    if (d.start > c.dayStart) {
      c.dayStart = d.start
      c.dayEnd = d.end
      c.day = takeLater(c.laterDays, d.start)
    }
    if (m.start > c.monthStart) {
      c.monthStart = m.start
      c.monthEnd = m.end
      c.month = takeLater(c.laterMonths, m.start)
    }
    return c
  }

  /**
   * Counts `cost` (negative: a cost moved down, never below $0) of a call stamped `ts` in the
   * counter's day and month when it falls in them, and in its own later day or month when it is
   * stamped after them, kept for when the counter rolls into it; a call of an earlier day or
   * month is not today's or this month's.
   */
  private addTo(c: Counter, ts: number, cost: number): void {
    if (ts >= c.monthEnd) addLater(c.laterMonths, this.clock.monthOf(ts).start, cost)
    else if (ts >= c.monthStart) c.month = Math.max(0, c.month + cost)
    if (ts >= c.dayEnd) addLater(c.laterDays, this.clock.dayOf(ts).start, cost)
    else if (ts >= c.dayStart) c.day = Math.max(0, c.day + cost)
  }

  /**
   * Adds the cost of a call that arrived at `ts` (ms). Calls from past periods only count where
   * they fall; one stamped in a later day or month (ahead of this clock) counts in it once it comes.
   */
  add(keyHash: string, ts: number, cost: number, now = Date.now()): void {
    if (!(cost > 0)) return
    let c = this.keys.get(keyHash)
    if (!c) {
      c = counter()
      this.keys.set(keyHash, c)
    }
    this.addTo(this.roll(c, now), ts, cost)
    this.addTo(this.roll(this.total, now), ts, cost)
    if (this.watchers.size > 0) this.changed()
  }

  /** Adds a recorded call's cost: money only (a plan's call has an API-equivalent value, not a cost). */
  addCall(call: Pick<CallRecord, 'api_key_hash' | 'ts' | 'cost_usd' | 'billing'>, now = Date.now()): void {
    if (call.billing !== 'subscription') this.add(call.api_key_hash, call.ts, call.cost_usd, now)
  }

  /** Corrects the spend of a call that arrived at `ts` by `delta` (a re-priced call; may be negative). */
  adjust(keyHash: string, ts: number, delta: number, now = Date.now()): void {
    if (delta > 0) return this.add(keyHash, ts, delta, now)
    if (!(delta < 0)) return
    const c = this.keys.get(keyHash)
    if (!c) return
    this.addTo(this.roll(c, now), ts, delta)
    this.addTo(this.roll(this.total, now), ts, delta)
    this.changed()
  }

  key(keyHash: string, now = Date.now()): Spend {
    const c = this.keys.get(keyHash)
    if (!c) return { day: 0, month: 0 }
    this.roll(c, now)
    return { day: c.day, month: c.month }
  }

  totals(now = Date.now()): Spend {
    this.roll(this.total, now)
    return { day: this.total.day, month: this.total.month }
  }

  /**
   * The moment `totals(now)` describes: `now`, or, when the totals have already rolled into a
   * later day (see roll), that day's start. Their day's and month's ends and pace are taken at it.
   */
  totalsAt(now = Date.now()): number {
    this.roll(this.total, now)
    return Math.max(now, this.total.dayStart)
  }

  /**
   * The moment a re-read of the stored spend at `now` is for (`periods`, `replace`): `now`, or the
   * start of the latest day the totals or any key's counter have already rolled into (see roll).
   * Read for `now`'s day and kept there, a re-read while the wall clock was stepped back across
   * midnight took every counter back to the day that had ended (the new day's calls in it: the
   * spend query has no upper bound), and forward again at $0 once the clock was past midnight.
   */
  readAt(now = Date.now()): number {
    let at = Math.max(now, this.total.dayStart)
    for (const c of this.keys.values()) at = Math.max(at, c.dayStart)
    return at
  }

  /** Seeds the counters from the calls already in the database (at start-up). */
  load(db: Database.Database, now = Date.now()): void {
    this.replace(db.prepare(SPEND_SQL).all(this.periods(now)) as StoredSpend[], now)
  }

  /** The starts of today, this month and tomorrow, the parameters of SPEND_SQL. */
  periods(now = Date.now()): { day: number; month: number; next: number } {
    const day = this.clock.dayOf(now)
    return { day: day.start, month: this.clock.monthOf(now).start, next: day.end }
  }

  /** Every counter set to what SPEND_SQL read (with `periods(now)`), nothing else kept. */
  replace(rows: readonly StoredSpend[], now = Date.now()): void {
    this.read = true
    this.keys.clear()
    Object.assign(this.total, counter())
    this.roll(this.total, now)
    for (const r of rows) {
      let c = this.keys.get(r.k)
      if (!c) {
        c = this.roll(counter(), now)
        this.keys.set(r.k, c)
      }
      for (const to of [c, this.total]) {
        if (r.at === null) {
          to.day += r.day
          to.month += r.month
        } else this.addTo(to, r.at, r.day)
      }
    }
    this.changed()
  }

  /**
   * Adds the spend of the calls already in a shared store (PostgreSQL, at start-up) to what is
   * counted in memory. The PostgreSQL ledger calls it before it writes any call of its own, so
   * the calls recorded meanwhile (counted by `add`, not stored yet) are counted once. The read's
   * day and month only where a counter is still in them: a call counted meanwhile may have rolled
   * it on to the next (the read answered after midnight), and the ended day's spend was added to it.
   */
  async loadStore(store: SqlReader, now = Date.now()): Promise<void> {
    const periods = this.periods(now)
    const { day, month } = periods
    const rows = await store.all<StoredSpend>(SPEND_SQL, periods)
    for (const r of rows) {
      let c = this.keys.get(r.k)
      if (!c) {
        c = counter()
        this.keys.set(r.k, c)
      }
      for (const to of [this.roll(c, now), this.roll(this.total, now)]) {
        if (r.at !== null) {
          this.addTo(to, r.at, r.day)
          continue
        }
        if (to.dayStart === day) to.day += r.day
        if (to.monthStart === month) to.month += r.month
      }
    }
    this.read = true
    this.changed()
  }
}

/**
 * A row of SPEND_SQL: a key's spend of today (`day`) and of this month up to tomorrow (`month`)
 * with `at` null, or (`at` set) its calls stamped at `at`, tomorrow or later, costing `day`.
 */
export interface StoredSpend {
  k: string
  month: number
  day: number
  at: number | null
}

/**
 * Today's and this month's spend per key, from the stored calls (plan calls are not spend), and
 * the calls stamped after today (ahead of this clock), each in the day and month its stamp falls in.
 */
export const SPEND_SQL = `SELECT api_key_hash AS k,
        SUM(cost_usd) AS month,
        SUM(CASE WHEN ts >= @day THEN cost_usd ELSE 0 END) AS day,
        NULL AS at
   FROM calls WHERE ts >= @month AND ts < @next AND billing <> 'subscription' AND origin_id IS NULL GROUP BY api_key_hash
 UNION ALL
 SELECT api_key_hash AS k, SUM(cost_usd) AS month, SUM(cost_usd) AS day, ts AS at
   FROM calls WHERE ts >= @next AND billing <> 'subscription' AND origin_id IS NULL GROUP BY api_key_hash, ts`
