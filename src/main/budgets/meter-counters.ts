import type { Period } from '../time/zone'
import { addLater, takeLater } from '../time/later'
import { reachedAt } from './reached'

/**
 * The counters a budget meter (./meter.ts) is made of: spend per calendar period (with what is
 * kept for a later one), per rolling window by minute, and the last minute's requests and tokens.
 * Every read and write is O(1) amortised.
 */

/** A rolling window's buckets are whole minutes of arrival time. */
export const MINUTE = 60_000

/** The start of the minute `ts` falls in: the bucket a call that arrived at `ts` counts in. */
export function minuteOf(ts: number): number {
  return ts - (ts % MINUTE)
}

/**
 * When a window's spend will be under `limit` if nothing more is spent: its buckets (`minutes`
 * and their `costs`, oldest first, from index `from`, summing to `sum`) leave it one by one, each
 * a window's length after its minute ends (now + length when none brings it under).
 */
export function windowResetsAt(
  minutes: readonly number[],
  costs: readonly number[],
  from: number,
  sum: number,
  limit: number,
  lengthMs: number,
  now: number,
): number {
  // Under it as the limit is reached (./reached.ts): a spend within float drift of it is not under.
  const at = reachedAt(limit)
  let left = sum
  for (let i = from; i < minutes.length; i++) {
    left -= costs[i]
    if (left < at || sum < at) return minutes[i] + MINUTE + lengthMs
  }
  return now + lengthMs
}
/**
 * Told that a meter keeps spend for a later calendar period (its start and end): its thresholds are
 * to be checked when that period starts, no call of the key needed (./held-check.ts).
 */
export type HeldListener = (start: number, end: number) => void

export class Calendar {
  start = -1
  end = -1
  spent = 0
  /**
   * The spend of calls stamped in a later period (ahead of the clock: a team member's running
   * fast, an agent's log imported from such a machine), by its start: its spend once rolled into.
   */
  private later: Map<number, number> | null = null

  roll(p: Period): void {
    if (this.start !== p.start) {
      this.start = p.start
      this.end = p.end
      this.spent = takeLater(this.later, p.start)
    }
  }

  /**
   * Counts `cost` (negative: a cost moved down) of a call stamped `ts` here when it falls in this
   * period, or in its own later one (`held` told of that period when the cost is a spend).
   */
  add(ts: number, cost: number, periodOf: (ts: number) => Period, held?: HeldListener): void {
    if (ts < this.end) {
      if (ts >= this.start) this.spent += cost
      return
    }
    const p = periodOf(ts)
    addLater((this.later ??= new Map()), p.start, cost)
    if (held && cost > 0) held(p.start, p.end)
  }
}

/** Spend per minute over a rolling window, oldest first; buckets are whole minutes of arrival time. */
export class MinuteRing {
  private minutes: number[] = []
  private costs: number[] = []
  private head = 0
  private sum = 0

  constructor(readonly lengthMs: number) {}

  add(ts: number, cost: number, now: number): void {
    if (ts <= now - this.lengthMs - MINUTE) return
    const m = minuteOf(ts)
    let i = this.minutes.length - 1
    // Calls end out of order: a long call arrived minutes before the one that just ended.
    while (i >= this.head && this.minutes[i] > m) i--
    if (i >= this.head && this.minutes[i] === m) this.costs[i] += cost
    else {
      this.minutes.splice(i + 1, 0, m)
      this.costs.splice(i + 1, 0, cost)
    }
    this.sum += cost
  }

  private evict(now: number): void {
    const edge = now - this.lengthMs
    let moved = false
    while (this.head < this.minutes.length && this.minutes[this.head] + MINUTE <= edge) {
      this.head++
      moved = true
    }
    if (!moved) return
    if (this.head > 256 && this.head * 2 > this.minutes.length) {
      this.minutes = this.minutes.slice(this.head)
      this.costs = this.costs.slice(this.head)
      this.head = 0
    }
    // Recomputed rather than subtracted, so float drift never builds up.
    let s = 0
    for (let i = this.head; i < this.costs.length; i++) s += this.costs[i]
    this.sum = s
  }

  spent(now: number): number {
    this.evict(now)
    return this.sum
  }

  /** When spend in the window will be under `limit` if nothing more is spent (now + length when empty). */
  resetsAt(limit: number, now: number): number {
    this.evict(now)
    return windowResetsAt(this.minutes, this.costs, this.head, this.sum, limit, this.lengthMs, now)
  }
}

/** Timestamps (and an amount each) of the last minute, oldest first. */
export class LastMinute {
  private ts: number[] = []
  private amounts: number[] = []
  private head = 0
  private sum = 0

  add(ts: number, amount: number): void {
    this.ts.push(ts)
    this.amounts.push(amount)
    this.sum += amount
  }

  /** Adds `amount` at `ts`, which may be before the latest entry (oldest first kept). */
  insert(ts: number, amount: number): void {
    let i = this.ts.length
    while (i > this.head && this.ts[i - 1] > ts) i--
    this.ts.splice(i, 0, ts)
    this.amounts.splice(i, 0, amount)
    this.sum += amount
  }

  /** Takes back `amount` of what was added at `ts` (the latest such entry still in the minute). */
  take(ts: number, amount: number): void {
    for (let i = this.ts.length - 1; i >= this.head; i--) {
      if (this.ts[i] !== ts || this.amounts[i] < amount) continue
      this.amounts[i] -= amount
      this.sum -= amount
      return
    }
  }

  private evict(now: number): void {
    let moved = false
    while (this.head < this.ts.length && this.ts[this.head] <= now - MINUTE) {
      this.sum -= this.amounts[this.head]
      this.head++
      moved = true
    }
    if (moved && this.head > 64 && this.head * 2 > this.ts.length) {
      this.ts = this.ts.slice(this.head)
      this.amounts = this.amounts.slice(this.head)
      this.head = 0
    }
    if (this.head === this.ts.length) this.sum = 0
  }

  total(now: number): number {
    this.evict(now)
    return this.sum
  }

  /** When the total will be under `limit`. */
  under(limit: number, now: number): number {
    this.evict(now)
    let left = this.sum
    for (let i = this.head; i < this.ts.length; i++) {
      left -= this.amounts[i]
      if (left < limit) return this.ts[i] + MINUTE
    }
    return now + MINUTE
  }
}
