import type { PeriodClock } from '../time/zone'
import type { Rule } from './rules'
import { Calendar, type HeldListener, LastMinute, MinuteRing } from './meter-counters'

/**
 * What one budget rule has seen of one API key: spend per calendar period, per rolling window
 * and per session, requests and tokens of the last minute, and the reservations of its calls
 * in flight. Every read and write is O(1) amortised; nothing here touches the database.
 */

export type SpendPeriod = 'daily' | 'weekly' | 'monthly' | 'window' | 'session'

export interface PeriodState {
  period: SpendPeriod
  limit: number
  spent: number
  /** Start of the period (window: now minus its length; session: 0). */
  start: number
  /** When the period resets (window: when enough spend leaves it to be under the limit); null for a session. */
  resetsAt: number | null
  /** A rolling window's length (ms); absent for the other periods. */
  lengthMs?: number
}

export interface RateState {
  kind: 'requests' | 'tokens'
  limit: number
  used: number
  /** When the last minute's use will have dropped under the limit. */
  retryAt: number
}

/**
 * Of several limits reached at once, the one whose block lasts longest: the one whose reset is
 * latest (a session's, which never resets, latest of all). A refusal names it, so that retrying
 * at its `resetsAt` is not refused again by another. The periods are not ordered by reset: a
 * week can end after the month it started in, a rolling window free after midnight.
 */
export function latestReset<T extends PeriodState>(reached: readonly T[]): T | undefined {
  let out: T | undefined
  for (const p of reached) {
    if (out === undefined) out = p
    else if (out.resetsAt !== null && (p.resetsAt === null || p.resetsAt > out.resetsAt)) out = p
  }
  return out
}

/** Sessions idle for longer are forgotten; at start-up the others are loaded back whole (scope.ts: sessionHistoryStart). */
export const SESSION_MEMORY_MS = 7 * 24 * 3600_000

export class Meter {
  private readonly day = new Calendar()
  private readonly week = new Calendar()
  private readonly month = new Calendar()
  private readonly window: MinuteRing | null
  private readonly sessions: Map<string, { spent: number; last: number }> | null
  private requests = new LastMinute()
  private tokens = new LastMinute()
  private adds = 0
  /** The calls in flight: shared with the meter this one replaced at a reload (`carryOver`), whose reservations settle on it. */
  private live = { inFlight: 0, reservedUsd: 0 }

  /** Calls admitted under this rule and not yet settled, and their summed reservations. */
  get inFlight(): number {
    return this.live.inFlight
  }
  set inFlight(n: number) {
    this.live.inFlight = n
  }
  get reservedUsd(): number {
    return this.live.reservedUsd
  }
  set reservedUsd(usd: number) {
    this.live.reservedUsd = usd
  }

  constructor(
    readonly rule: Rule,
    private readonly clock: PeriodClock,
    private readonly held?: HeldListener,
  ) {
    this.window = rule.window_hours !== null && rule.window_limit_usd !== null ? new MinuteRing(rule.window_hours * 3600_000) : null
    this.sessions = rule.session_limit_usd !== null ? new Map() : null
  }

  /**
   * Rolls the calendar periods on to `now`'s, and returns the time they are read at. A time before
   * the day the meter has rolled into (a read timed before an await while calls went on, the wall
   * clock stepped back across midnight) is read in that day: a period never rolls back, which
   * started the ended one again at $0, and the next call the current one, its spend so far lost.
   */
  private roll(now: number): number {
    const t = Math.max(now, this.day.start)
    this.day.roll(this.clock.dayOf(t))
    this.week.roll(this.clock.weekOf(t))
    this.month.roll(this.clock.monthOf(t))
    return t
  }

  /**
   * The moment a read at `now` describes: `now`, or the start of the later day this meter has
   * already rolled into (see roll), which it is read in.
   */
  readAt(now: number): number {
    return this.roll(now)
  }

  /** A call's cost in the day, week and month its stamp `ts` falls in (one stamped ahead: in its own, when it comes). */
  private addPeriods(ts: number, cost: number): void {
    this.day.add(ts, cost, (x) => this.clock.dayOf(x), this.held)
    this.week.add(ts, cost, (x) => this.clock.weekOf(x), this.held)
    this.month.add(ts, cost, (x) => this.clock.monthOf(x), this.held)
  }

  /** Counts the cost of a call that arrived at `ts`, in every period it falls in. */
  add(ts: number, cost: number, session: string, last: number, now: number): void {
    if (!(cost > 0)) return
    this.roll(now)
    this.addPeriods(ts, cost)
    this.window?.add(ts, cost, now)
    if (this.sessions && session) {
      const s = this.sessions.get(session)
      if (s) {
        s.spent += cost
        s.last = Math.max(s.last, last)
      } else this.sessions.set(session, { spent: cost, last })
      if (++this.adds % 1024 === 0) {
        for (const [k, v] of this.sessions) if (v.last < now - SESSION_MEMORY_MS) this.sessions.delete(k)
      }
    }
  }

  /**
   * Moves the cost of a call that arrived at `ts` by `delta` (a re-priced call: positive or
   * negative), in every period it falls in, as `add` counted it.
   */
  adjust(ts: number, delta: number, session: string, now: number): void {
    if (delta > 0) return this.add(ts, delta, session, ts, now)
    if (!(delta < 0)) return
    this.roll(now)
    this.addPeriods(ts, delta)
    this.window?.add(ts, delta, now)
    const s = session ? this.sessions?.get(session) : undefined
    if (s) s.spent += delta
  }

  addRequest(now: number, n = 1): void {
    if (this.rule.requests_per_minute !== null && n > 0) this.requests.add(now, n)
  }

  /** A request counted at `at` that was not sent after all (another key of the call was refused). */
  takeBackRequest(at: number): void {
    if (this.rule.requests_per_minute !== null) this.requests.take(at, 1)
  }

  addTokens(n: number, now: number): void {
    if (this.rule.tokens_per_minute !== null && n > 0) this.tokens.add(now, n)
  }

  /**
   * Takes over what the recorded calls cannot give a meter rebuilt at a reload (a rule change):
   * the reservations of the calls in flight (which settle on `old`, whose state this shares from
   * now on), the last minute's requests (counted at admission, not stored yet) and its tokens,
   * at the moments their calls ended (the ledger has only when each call arrived).
   */
  carryOver(old: Meter): void {
    this.live = old.live
    this.requests = old.requests
    this.tokens = old.tokens
  }

  /**
   * Counts in the last minute, after `carryOver`, the requests and tokens of a call the ledger holds
   * that the meter carried over did not count (outside its rule's scope before an edit), at `at`.
   */
  countAlso(at: number, requests: number, tokens: number): void {
    if (this.rule.requests_per_minute !== null && requests > 0) this.requests.insert(at, requests)
    if (this.rule.tokens_per_minute !== null && tokens > 0) this.tokens.insert(at, tokens)
  }

  /** True when the calls in flight or the last minute's requests or tokens hold something a reload would lose. */
  busy(now: number): boolean {
    return this.live.inFlight > 0 || this.requests.total(now) > 0 || this.tokens.total(now) > 0
  }

  /** Requests counted in the last minute (0 without a per-minute request limit). */
  requestsInLastMinute(now: number): number {
    return this.requests.total(now)
  }

  sessionSpent(session: string): number {
    return this.sessions?.get(session)?.spent ?? 0
  }

  /** Of the sessions with a call since `since`, the one that spent most under this rule (nearest its session limit); null when none. */
  fullestSession(since: number): { session: string; spent: number } | null {
    let out: { session: string; spent: number } | null = null
    for (const [session, s] of this.sessions ?? []) {
      if (s.last >= since && (out === null || s.spent > out.spent)) out = { session, spent: s.spent }
    }
    return out
  }

  /** The rule's money limits as they stand: monthly, weekly, daily, window, then the session's (when given). */
  periods(now: number, session?: string): PeriodState[] {
    const r = this.rule
    const t = this.roll(now)
    const windowed = this.window !== null && r.window_limit_usd !== null
    const sessioned = !!session && r.session_limit_usd !== null
    // Made at its length (read on every call, twice or more): a first push would give room for 17.
    const out: PeriodState[] = new Array(
      (r.monthly_limit_usd !== null ? 1 : 0) + (r.weekly_limit_usd !== null ? 1 : 0) + (r.daily_limit_usd !== null ? 1 : 0) + (windowed ? 1 : 0) + (sessioned ? 1 : 0),
    )
    let i = 0
    if (r.monthly_limit_usd !== null) {
      out[i++] = { period: 'monthly', limit: r.monthly_limit_usd, spent: this.month.spent, start: this.month.start, resetsAt: this.clock.monthOf(t).end }
    }
    if (r.weekly_limit_usd !== null) {
      out[i++] = { period: 'weekly', limit: r.weekly_limit_usd, spent: this.week.spent, start: this.week.start, resetsAt: this.clock.weekOf(t).end }
    }
    if (r.daily_limit_usd !== null) {
      out[i++] = { period: 'daily', limit: r.daily_limit_usd, spent: this.day.spent, start: this.day.start, resetsAt: this.clock.dayOf(t).end }
    }
    if (windowed) {
      const limit = r.window_limit_usd!
      const lengthMs = this.window!.lengthMs
      out[i++] = { period: 'window', limit, spent: this.window!.spent(now), start: now - lengthMs, resetsAt: this.window!.resetsAt(limit, now), lengthMs }
    }
    if (sessioned) {
      out[i] = { period: 'session', limit: r.session_limit_usd!, spent: this.sessionSpent(session!), start: 0, resetsAt: null }
    }
    return out
  }

  /** The first rate limit the last minute has reached, or null. */
  rate(now: number): RateState | null {
    const r = this.rule
    if (r.requests_per_minute !== null) {
      const used = this.requests.total(now)
      if (used >= r.requests_per_minute) return { kind: 'requests', limit: r.requests_per_minute, used, retryAt: this.requests.under(r.requests_per_minute, now) }
    }
    if (r.tokens_per_minute !== null) {
      const used = this.tokens.total(now)
      if (used >= r.tokens_per_minute) return { kind: 'tokens', limit: r.tokens_per_minute, used, retryAt: this.tokens.under(r.tokens_per_minute, now) }
    }
    return null
  }
}
