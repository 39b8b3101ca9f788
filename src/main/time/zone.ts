/**
 * Calendar periods in an IANA time zone: "today" and "this month" begin at local midnight
 * and on the first of the month in the configured zone (contract: Budget rules, Dashboard).
 *
 * UTC (a server's usual zone) is computed with Date's UTC fields: no Intl formatter, so a
 * server in UTC never loads ICU's locale and zone data (about 6 MiB of Node's pages).
 */
import { readlinkSync } from 'node:fs'
import { isUtc } from '../../shared/zone-name'

export { isUtc, sameTimeZone } from '../../shared/zone-name'

const formatters = new Map<string, Intl.DateTimeFormat>()

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      // Intl names the year 0 "1 BC" (and -1 "2 BC"): localParts reads the year with its era.
      era: 'short',
    })
    formatters.set(tz, f)
  }
  return f
}

export interface LocalParts {
  year: number
  month: number // 1-12
  day: number
  hour: number
  minute: number
  second: number
}

export function localParts(ts: number, tz: string): LocalParts {
  if (isUtc(tz)) {
    const d = new Date(ts)
    return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate(), hour: d.getUTCHours(), minute: d.getUTCMinutes(), second: d.getUTCSeconds() }
  }
  const out: Record<string, number> = {}
  let bc = false
  for (const p of formatter(tz).formatToParts(ts)) {
    if (p.type === 'era') bc = p.value === 'BC'
    else if (p.type !== 'literal') out[p.type] = Number(p.value)
  }
  return {
    year: bc ? 1 - out.year : out.year,
    month: out.month,
    day: out.day,
    hour: out.hour,
    minute: out.minute,
    second: out.second,
  }
}

/**
 * Date.UTC for any year: Date.UTC reads a year from 0 to 99 as 1900 to 1999 (`since=0050-03-01`
 * was answered as 1950), so those years are set with setUTCFullYear, which takes them as they are.
 * The month (0-11) and day may overflow, as with Date.UTC.
 */
export function utcTime(year: number, month0: number, day: number, hour = 0, minute = 0, second = 0): number {
  if (!(year >= 0 && year < 100)) return Date.UTC(year, month0, day, hour, minute, second)
  const d = new Date(0)
  d.setUTCFullYear(year, month0, day)
  d.setUTCHours(hour, minute, second, 0)
  return d.getTime()
}

/** The day of the week (0 = Sunday) of a calendar day (month 1-12). */
export function dayOfWeek(year: number, month: number, day: number): number {
  return new Date(utcTime(year, month - 1, day)).getUTCDay()
}

/** Offset of the zone from UTC at instant `ts`, in ms (positive east of Greenwich). */
export function offsetMs(ts: number, tz: string): number {
  const p = localParts(ts, tz)
  const asUtc = utcTime(p.year, p.month - 1, p.day, p.hour, p.minute, p.second)
  return asUtc - Math.floor(ts / 1000) * 1000
}

const DAY_MS = 86_400_000

/**
 * The UTC instant of local wall-clock time y-m-d 00:00 in `tz` (month 1-12, may overflow): the
 * first instant of that local day. Where midnight happens twice (a zone that falls back to 00:00)
 * it is the first; where it does not exist (a zone that springs forward at 00:00, as Chile,
 * Cuba, Brazil and Paraguay have) the day begins at the change, e.g. at 01:00.
 */
export function localMidnight(year: number, month: number, day: number, tz: string): number {
  return wallInstant(utcTime(year, month - 1, day), tz)
}

/**
 * The first UTC instant whose wall clock in `tz` reads `wall` (a local time written as if it
 * were UTC, e.g. `Date.UTC(2026, 10, 1, 1, 30)` for 01:30 on 2026-11-01): the first of two where
 * the clocks fall back over it, the change itself where they spring forward over it.
 */
export function wallInstant(wall: number, tz: string): number {
  // The instant lies within 14 hours of `wall`; the offsets a day either side bracket it.
  const before = offsetMs(wall - DAY_MS, tz)
  const after = offsetMs(wall + DAY_MS, tz)
  if (before === after && wall - before + offsetMs(wall - before, tz) === wall) return wall - before
  return midnightNearChange(wall, tz, [before, after, offsetMs(wall, tz)])
}

/** `wallInstant` near an offset change: the first instant whose wall clock reads `wall` or later. */
function midnightNearChange(wall: number, tz: string, offsets: number[]): number {
  const candidates = offsets.map((o) => wall - o)
  const exact = candidates.filter((t) => t + offsetMs(t, tz) === wall)
  if (exact.length > 0) return Math.min(...exact)
  // Midnight does not exist: the day begins where the clock jumps over it. Bisect (to the
  // second) between an instant still on the day before and one already on this day.
  let lo = Math.min(...candidates) // wall clock < wall
  let hi = Math.max(...candidates) // wall clock >= wall
  while (hi - lo > 1000) {
    const mid = lo + Math.max(1000, Math.floor((hi - lo) / 2000) * 1000)
    if (mid + offsetMs(mid, tz) >= wall) hi = mid
    else lo = mid
  }
  return hi
}

export function startOfDay(ts: number, tz: string): number {
  const p = localParts(ts, tz)
  return localMidnight(p.year, p.month, p.day, tz)
}

export function startOfNextDay(ts: number, tz: string): number {
  const p = localParts(ts, tz)
  return localMidnight(p.year, p.month, p.day + 1, tz)
}

export function startOfMonth(ts: number, tz: string): number {
  const p = localParts(ts, tz)
  return localMidnight(p.year, p.month, 1, tz)
}

export function startOfNextMonth(ts: number, tz: string): number {
  const p = localParts(ts, tz)
  return localMidnight(p.year, p.month + 1, 1, tz)
}

/** The local midnight that begins the week of `ts`; `weekStart` is the first day, 0 = Sunday … 6 = Saturday. */
export function startOfWeek(ts: number, tz: string, weekStart: number): number {
  const p = localParts(ts, tz)
  const dow = dayOfWeek(p.year, p.month, p.day)
  return localMidnight(p.year, p.month, p.day - ((dow - weekStart + 7) % 7), tz)
}

export function startOfNextWeek(ts: number, tz: string, weekStart: number): number {
  const p = localParts(ts, tz)
  const dow = dayOfWeek(p.year, p.month, p.day)
  return localMidnight(p.year, p.month, p.day - ((dow - weekStart + 7) % 7) + 7, tz)
}

export function isValidTimeZone(tz: string): boolean {
  if (isUtc(tz)) return true
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz })
    return true
  } catch {
    return false
  }
}

/**
 * The machine's IANA zone, as Intl reports it. A machine that is plainly in UTC (TZ names UTC,
 * or TZ is unset and /etc/localtime links to the UTC zone file) answers 'UTC' without asking
 * Intl, which reports the same; anything else asks Intl.
 */
export function machineTimeZone(): string {
  if (machineIsUtc()) return 'UTC'
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'
}

function machineIsUtc(): boolean {
  const env = process.env.TZ
  if (env !== undefined) return isUtc(env.startsWith(':') ? env.slice(1) : env)
  try {
    return /\/zoneinfo\/(Etc\/)?(UTC|GMT)$/.test(readlinkSync('/etc/localtime'))
  } catch {
    return false
  }
}

export interface Period {
  start: number
  end: number
}

/**
 * Keeps the current day and month boundaries so the hot path compares two numbers
 * instead of formatting a date per call.
 */
export class PeriodClock {
  private day: Period = { start: 0, end: 0 }
  private month: Period = { start: 0, end: 0 }
  private week: Period = { start: 0, end: 0 }
  private zone: string
  private firstDay: number

  /** `weekStart`: the first day of a week, 0 = Sunday … 6 = Saturday (Monday by default). */
  constructor(tz: string, weekStart = 1) {
    this.zone = tz
    this.firstDay = weekStart
  }

  get tz(): string {
    return this.zone
  }

  get weekStart(): number {
    return this.firstDay
  }

  /**
   * Counts in another zone or week from now on, for everything holding this clock (the budget
   * clock shared by instances on one PostgreSQL: ../budgets/shared-clock.ts). True when it changed.
   */
  set(tz: string, weekStart: number): boolean {
    if (tz === this.zone && weekStart === this.firstDay) return false
    this.zone = tz
    this.firstDay = weekStart
    this.day = { start: 0, end: 0 }
    this.month = { start: 0, end: 0 }
    this.week = { start: 0, end: 0 }
    return true
  }

  weekOf(ts: number): Period {
    if (ts < this.week.start || ts >= this.week.end) {
      this.week = { start: startOfWeek(ts, this.tz, this.weekStart), end: startOfNextWeek(ts, this.tz, this.weekStart) }
    }
    return this.week
  }

  dayOf(ts: number): Period {
    if (ts < this.day.start || ts >= this.day.end) {
      this.day = { start: startOfDay(ts, this.tz), end: startOfNextDay(ts, this.tz) }
    }
    return this.day
  }

  monthOf(ts: number): Period {
    if (ts < this.month.start || ts >= this.month.end) {
      this.month = { start: startOfMonth(ts, this.tz), end: startOfNextMonth(ts, this.tz) }
    }
    return this.month
  }
}
