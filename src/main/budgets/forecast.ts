import type { PeriodState } from './meter'
import { reached } from './reached'

const HOUR = 3600_000
/** The pace of a calendar period is its spend over at least this much of it, so a first call at 00:01 does not project a fortune. */
const MIN_ELAPSED = HOUR

export interface Forecast {
  /** USD per ms. */
  rate: number
  projected: number
  exhaustedAt: number | null
}

/**
 * The forecast of one window at the current pace. Calendar periods: the pace is the spend so far
 * over the time elapsed (at least an hour), projected to the period's end; the limit is reached
 * at `now + left / pace` if that is before the end. A rolling window: the pace is its spend over
 * its length, and at that steady pace it ends where it is (projected = spent).
 * A calendar period is read at no time before it began: a meter never rolls back, so a `now` timed
 * before the period its spend is of (read before an await while a call rolled it on, a clock
 * stepped back across midnight) is that period's start, never a pace, projection or exhaustion
 * taken in the period before (an exhausted_at before its own window began).
 */
export function forecast(p: PeriodState, at: number): Forecast {
  if (p.period === 'window' || p.resetsAt === null) {
    const length = Math.max(at - p.start, 1)
    return { rate: p.spent / length, projected: p.spent, exhaustedAt: reached(p.spent, p.limit) ? at : null }
  }
  const now = Math.max(at, p.start)
  const rate = p.spent / Math.max(now - p.start, MIN_ELAPSED)
  const projected = p.spent + rate * Math.max(0, p.resetsAt - now)
  let exhaustedAt: number | null = null
  if (reached(p.spent, p.limit)) exhaustedAt = now
  else if (rate > 0) {
    const at = now + (p.limit - p.spent) / rate
    if (at < p.resetsAt) exhaustedAt = Math.ceil(at)
  }
  return { rate, projected, exhaustedAt }
}

