import type Database from 'better-sqlite3'
import type { SqlReader } from '../storage/sql'
import type { CallRecord } from './record'
import { PeriodClock } from '../time/zone'

interface Counter {
  dayStart: number
  day: number
  monthStart: number
  month: number
}

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
  private readonly total: Counter = { dayStart: 0, day: 0, monthStart: 0, month: 0 }
  readonly clock: PeriodClock
  /** Told after every change of the totals (the tray); none on a headless server. */
  private readonly watchers = new Set<() => void>()

  constructor(readonly tz: string) {
    this.clock = new PeriodClock(tz)
  }

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
    const d = this.clock.dayOf(now).start
    const m = this.clock.monthOf(now).start
    if (d > c.dayStart) {
      c.dayStart = d
      c.day = 0
    }
    if (m > c.monthStart) {
      c.monthStart = m
      c.month = 0
    }
    return c
  }

  /** Adds the cost of a call that arrived at `ts` (ms). Calls from past periods only count where they fall. */
  add(keyHash: string, ts: number, cost: number, now = Date.now()): void {
    if (!(cost > 0)) return
    let c = this.keys.get(keyHash)
    if (!c) {
      c = { dayStart: 0, day: 0, monthStart: 0, month: 0 }
      this.keys.set(keyHash, c)
    }
    addTo(this.roll(c, now), ts, cost)
    addTo(this.roll(this.total, now), ts, cost)
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
    for (const counter of [this.roll(c, now), this.roll(this.total, now)]) {
      if (ts >= counter.monthStart) counter.month = Math.max(0, counter.month + delta)
      if (ts >= counter.dayStart) counter.day = Math.max(0, counter.day + delta)
    }
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

  /** The starts of today and this month, the parameters of SPEND_SQL. */
  periods(now = Date.now()): { day: number; month: number } {
    return { day: this.clock.dayOf(now).start, month: this.clock.monthOf(now).start }
  }

  /** Every counter set to what SPEND_SQL read (with `periods(now)`), nothing else kept. */
  replace(rows: readonly StoredSpend[], now = Date.now()): void {
    const { day, month } = this.periods(now)
    this.keys.clear()
    this.total.dayStart = day
    this.total.monthStart = month
    this.total.day = 0
    this.total.month = 0
    for (const r of rows) {
      this.keys.set(r.k, { dayStart: day, day: r.day, monthStart: month, month: r.month })
      this.total.day += r.day
      this.total.month += r.month
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
    const day = this.clock.dayOf(now).start
    const month = this.clock.monthOf(now).start
    const rows = await store.all<StoredSpend>(SPEND_SQL, { day, month })
    for (const r of rows) {
      let c = this.keys.get(r.k)
      if (!c) {
        c = { dayStart: 0, day: 0, monthStart: 0, month: 0 }
        this.keys.set(r.k, c)
      }
      for (const counter of [this.roll(c, now), this.roll(this.total, now)]) {
        if (counter.dayStart === day) counter.day += r.day
        if (counter.monthStart === month) counter.month += r.month
      }
    }
    this.changed()
  }
}

/** Counts `cost` of a call that arrived at `ts` in the counter's day and month. */
function addTo(counter: Counter, ts: number, cost: number): void {
  if (ts >= counter.monthStart) counter.month += cost
  if (ts >= counter.dayStart) counter.day += cost
}

export interface StoredSpend {
  k: string
  month: number
  day: number
}

/** Today's and this month's spend per key, from the stored calls (plan calls are not spend). */
export const SPEND_SQL = `SELECT api_key_hash AS k,
        SUM(cost_usd) AS month,
        SUM(CASE WHEN ts >= @day THEN cost_usd ELSE 0 END) AS day
   FROM calls WHERE ts >= @month AND billing <> 'subscription' AND origin_id IS NULL GROUP BY api_key_hash`
