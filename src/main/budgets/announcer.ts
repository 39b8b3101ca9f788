import type { PeriodClock } from '../time/zone'
import { announcedId } from './announced-id'
import { DEFAULT_ALERT_AT_PCT } from './check'
import type { KeyState } from './key-state'
import type { Meter, PeriodState } from './meter'
import type { Rule } from './rules'
import type { BudgetAlert } from './types'
import { reached } from './reached'
import { alertOf, crossingKey, levelOf } from './levels'
import { callEach } from '../ledger/listeners'

/** A key's spend under a rule crossed one of the rule's `alert_at_pct` thresholds in a window. */
export interface ThresholdEvent {
  rule: Rule
  key: KeyState
  state: PeriodState
  /** The threshold crossed, a fraction of the limit. */
  pct: number
  /** Told `onRestored`: found crossed by a read, as an instance kept it announced (not a crossing seen here). */
  restored?: boolean
  /** A rolling window's told `onRestored`: when it was last crossed, as the instance that kept it announced said (its kept end less a window's length). */
  crossedAt?: number
}

/** Remembered thresholds beyond this many are forgotten all at once (a bound, never reached in practice). */
const MAX_CROSSED = 100_000

/**
 * Tells the rest of the app about budget state changes, each once: a key reaching a rule's
 * warning or blocking level in a period (tray, desktop notifications), and its spend crossing
 * each `alert_at_pct` threshold in a window (webhooks; the desktop for those under 100%).
 */
export class BudgetAnnouncer {
  private readonly listeners = new Set<(alert: BudgetAlert) => void>()
  /**
   * Levels already announced, by `crossingKey` (a calendar period by its start, so a week that
   * straddles a month end is one week), each with when it can be forgotten: a calendar period's
   * end; never for a rolling window, which forgets a level once its spend is back under it.
   */
  private readonly fired = new Map<string, number>()
  /** When `fired` was last rid of the levels of ended periods. */
  private firedPruned = 0
  private readonly thresholdListeners = new Set<(e: ThresholdEvent) => void>()
  /** Told of calendar thresholds a reload finds crossed and kept as announced (`onRestored`). */
  private readonly restoredListeners = new Set<(e: ThresholdEvent) => void>()
  /** Thresholds already crossed, by rule, key, period, period start, limit and threshold, each with when it can be forgotten (as `fired`). */
  private readonly crossed = new Map<string, number>()
  /**
   * Thresholds announced in calendar periods not yet ended, as kept across restarts (by
   * `announcedId`), each with when its period ends: not announced again in that period, though
   * the spend read back at the start was under them (it fell back: a failed job's estimate taken
   * back, a re-price) and crosses them anew.
   */
  private readonly announced = new Map<string, number>()
  /** Where an announced threshold is kept across a restart (./announced.ts); null: in memory only. */
  keep: ((id: string, until: number, now: number) => void) | null = null
  /** Calendar periods, by start, some meter keeps spend for before they start (`noteHeld`), each with its end. */
  private readonly held = new Map<number, number>()
  /** Those noted before `keep` was set (a start-up's read): kept with `keepHeld`. */
  private heldUnkept: number[] = []

  constructor(private readonly clock: PeriodClock) {}

  /** The thresholds announced before this start in periods not yet ended (./announced.ts). */
  remember(rows: Iterable<{ id: string; until: number }>, now = Date.now()): void {
    // The later end of the two: a read may bring a row written before this instance kept a window's crossing again.
    for (const r of rows) if (r.until > now && this.announced.size < MAX_CROSSED) this.announced.set(r.id, Math.max(r.until, this.announced.get(r.id) ?? 0))
  }

  onAlert(listener: (alert: BudgetAlert) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  onThreshold(listener: (e: ThresholdEvent) => void): () => void {
    this.thresholdListeners.add(listener)
    return () => this.thresholdListeners.delete(listener)
  }

  /**
   * Told of each calendar period's threshold a reload (a start, a rule change, a read of every
   * instance's calls) finds the spend over for the first time here, when an instance has kept it
   * as announced (./announced.ts): announced, though maybe not to this instance's webhooks
   * (PostgreSQL: another instance, with none or others, crossed it while this one was down). Also
   * each one the meters cross here that an instance already kept as announced. Not the thresholds
   * announced anew: those go to `onThreshold`.
   */
  onRestored(listener: (e: ThresholdEvent) => void): () => void {
    this.restoredListeners.add(listener)
    return () => this.restoredListeners.delete(listener)
  }

  /**
   * Tells listeners the first time a key reaches a level under a rule in a period: once per
   * calendar period; for a rolling window, again once its spend has fallen back under the level.
   */
  raise(s: KeyState, rule: Rule, periods: PeriodState[], now: number): void {
    if (this.listeners.size === 0) return
    this.prune(now)
    for (const p of periods) {
      if (p.period === 'session') continue
      const level = levelOf(rule, p)
      if (p.period === 'window') {
        // A window's spend falls as time passes: a level it is under again is news when next reached.
        if (level !== 'blocking') this.fired.delete(crossingKey(rule, s.hash, p, 'blocking'))
        if (level === null) this.fired.delete(crossingKey(rule, s.hash, p, 'warning'))
      }
      if (!level) continue
      const id = crossingKey(rule, s.hash, p, level)
      if (this.fired.has(id)) continue
      if (this.fired.size >= MAX_CROSSED) this.fired.clear()
      this.fired.set(id, p.period === 'window' || p.resetsAt === null ? Infinity : p.resetsAt)
      callEach(this.listeners, alertOf(rule, s, p, level))
    }
  }

  /**
   * Forgets, once a day at most, the levels and thresholds announced in calendar periods that have
   * ended: kept, they would fill the maps of a server that runs for months until the bound clears
   * them all, and every crossing of the current periods would be announced again.
   */
  private prune(now: number): void {
    const day = this.clock.dayOf(now).start
    if (day === this.firedPruned) return
    this.firedPruned = day
    for (const [id, end] of this.fired) if (end <= now) this.fired.delete(id)
    for (const [id, end] of this.crossed) if (end <= now) this.crossed.delete(id)
    for (const [id, end] of this.announced) if (end <= now) this.announced.delete(id)
    for (const [start, end] of this.held) if (end <= now) this.held.delete(start)
  }

  /**
   * A meter keeps spend for the calendar period from `start` to `end` (a call stamped ahead of the
   * clock): its thresholds are checked when the period starts (`announceHeld`). Kept with the
   * announced thresholds (a hashed id, until the period ends), so a start during that period checks
   * them too; on PostgreSQL whichever instance held it.
   */
  noteHeld(start: number, end: number, now = Date.now()): void {
    if ((this.held.get(start) ?? 0) >= end) return
    if (this.held.size >= MAX_CROSSED) this.held.clear()
    this.held.set(start, end)
    const id = heldId(start)
    this.announced.set(id, Math.max(end, this.announced.get(id) ?? 0))
    if (this.keep) this.keepQuietly(id, end, now)
    else this.heldUnkept.push(start)
  }

  /** Keeps the periods held before `keep` was set (`noteHeld`). */
  keepHeld(now = Date.now()): void {
    const starts = this.heldUnkept
    this.heldUnkept = []
    for (const start of starts) {
      const end = this.held.get(start)
      if (end !== undefined && this.keep) this.keepQuietly(heldId(start), end, now)
    }
  }

  private keepQuietly(id: string, until: number, now: number): void {
    try {
      this.keep?.(id, until, now)
    } catch {
      // kept in memory only: a start in that period does not check it
    }
  }

  /**
   * Announces the thresholds a key's spend has reached in calendar periods that began with spend
   * kept for them (`noteHeld`: here, or kept by a server before this start), those not announced
   * yet: a period's held spend crosses them as it starts, where a read of the spend at a start
   * took them as announced, and no call of the key need come that period. Run when a period starts
   * and after start-up's read (./held-check.ts), never on a call's way. Not those of a rule set
   * after its period began: the rule change read the spend, held spend included, as announced
   * (README: Alerts), as a start does the other spend.
   */
  announceHeld(s: KeyState, m: Meter, now: number): void {
    const rule = m.rule
    const since = rule.created_at ?? -Infinity
    const periods = m.periods(now).filter((p) => p.period !== 'window' && p.period !== 'session' && since <= p.start && this.isHeld(p.start))
    if (periods.length === 0) return
    for (const p of periods) {
      for (const pct of rule.alert_at_pct ?? DEFAULT_ALERT_AT_PCT) {
        const id = crossingKey(rule, s.hash, p, pct)
        if (!this.announced.has(announcedId(id))) this.crossed.delete(id)
      }
    }
    this.thresholds(s, m, now, false, periods)
  }

  private isHeld(start: number): boolean {
    return this.held.has(start) || this.announced.has(heldId(start))
  }

  /**
   * A rolling window's spend falls as time passes: its thresholds the spend is back under are
   * announced again when next crossed. Called with the spend before a call counts in the meter.
   */
  rearm(s: KeyState, m: Meter, now: number): void {
    const rule = m.rule
    for (const p of m.periods(now)) {
      if (p.period !== 'window' || !(p.limit > 0)) continue
      for (const pct of rule.alert_at_pct ?? DEFAULT_ALERT_AT_PCT) {
        if (p.spent < pct * p.limit) this.crossed.delete(crossingKey(rule, s.hash, p, pct))
      }
    }
  }

  /**
   * Announces each threshold of a rule's limits the first time a key's spend reaches it in a
   * window: once per calendar period; a rolling window re-arms a threshold once its spend has
   * fallen back under it (here, or `rearm`). `periods`: the meter's, when the caller has them already.
   */
  thresholds(s: KeyState, m: Meter, now: number, silent: boolean, periods: readonly PeriodState[] = m.periods(now)): void {
    const rule = m.rule
    const pcts = rule.alert_at_pct ?? DEFAULT_ALERT_AT_PCT
    this.prune(now)
    for (const p of periods) {
      // A session's limit has no thresholds (`periods` may come with the session's, as `raise` takes them).
      if (p.period === 'session' || !(p.limit > 0)) continue
      for (const pct of pcts) {
        const over = reached(p.spent, pct * p.limit)
        // Under a calendar period's threshold (nearly every call) there is nothing to remember or forget.
        if (!over && p.period !== 'window') continue
        const id = crossingKey(rule, s.hash, p, pct)
        if (!over) {
          this.crossed.delete(id)
          continue
        }
        if (this.crossed.has(id)) continue
        if (this.crossed.size >= MAX_CROSSED) this.crossed.clear()
        const until = p.period === 'window' || p.resetsAt === null ? Infinity : p.resetsAt
        this.crossed.set(id, until)
        if (silent) {
          // A rolling window's too: the instance with the team's webhook, started again after
          // another with none announced it, took it as announced and its webhook never got it.
          const kept = this.announced.get(announcedId(id))
          if (this.restoredListeners.size > 0 && kept !== undefined) {
            const crossedAt = p.period === 'window' && p.lengthMs !== undefined ? kept - p.lengthMs : undefined
            callEach(this.restoredListeners, { rule, key: s, state: p, pct, restored: true, crossedAt })
          }
          continue
        }
        // A calendar period's threshold is announced once in it, restarts included (a rolling
        // window's re-arms by its spend, which a restart reads back as it was). One announced
        // already goes to `onRestored` all the same: another instance may have kept it as
        // announced before the call that crossed it was stored, and a read of the meters between
        // took it as announced with the spend still under it.
        if (until !== Infinity && !this.firstInPeriod(id, until, now)) {
          if (this.restoredListeners.size > 0) callEach(this.restoredListeners, { rule, key: s, state: p, pct, restored: true })
          continue
        }
        // A rolling window's crossing is kept as announced for a window's length (it re-arms by
        // its spend, not by this): a read of the meters that finds it crossed tells `onRestored`.
        if (until === Infinity && p.lengthMs !== undefined) this.keepWindow(id, now + p.lengthMs, now)
        callEach(this.thresholdListeners, { rule, key: s, state: p, pct })
        // The desktop notifies thresholds under 100% above `soft_limit_pct`: reaching the limit, or
        // the soft limit, is already the `blocking`/`warning` alert of `raise`.
        if (pct < 1 && (rule.soft_limit_pct === null || pct > rule.soft_limit_pct)) {
          callEach(this.listeners, { ...alertOf(rule, s, p, 'warning'), threshold_pct: pct })
        }
      }
    }
  }

  /** Keeps a rolling window's crossing (`crossingKey`) as announced until `until` (a read of the meters after it finds it announced). */
  private keepWindow(key: string, until: number, now: number): void {
    if (!this.keep) return
    const id = announcedId(key)
    if (this.announced.size >= MAX_CROSSED) this.announced.clear()
    this.announced.set(id, until)
    try {
      this.keep(id, until, now)
    } catch {
      // kept in memory only
    }
  }

  /** Whether a calendar period's threshold (`crossingKey`) is announced for the first time in its period (then kept as announced). */
  private firstInPeriod(key: string, until: number, now: number): boolean {
    if (this.announced.size === 0 && !this.keep) return true
    const id = announcedId(key)
    if (this.announced.has(id)) return false
    if (this.announced.size >= MAX_CROSSED) this.announced.clear()
    this.announced.set(id, until)
    try {
      this.keep?.(id, until, now)
    } catch {
      // kept in memory only: a restart may announce it again
    }
    return true
  }
}

/** The id a calendar period some meter kept spend for (`noteHeld`) is kept by, with the announced thresholds. */
function heldId(start: number): string {
  return announcedId(`held\n${start}`)
}
