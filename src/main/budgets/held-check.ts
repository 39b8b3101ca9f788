import type { BudgetEngine } from './engine'

/**
 * The longest a wait for the next day is set for. A day is 23 to 25 hours (a DST change), far under
 * the 2^31-1 ms past which Node fires a timer at once; an hour at most also reads the clock again
 * soon after it is stepped (a machine woken from sleep, the zone PostgreSQL's instances share moved:
 * ./shared-clock.ts), where one long wait would end hours after the day began.
 */
export const MAX_WAIT_MS = 3_600_000

/**
 * Spend kept for a later calendar period (calls stamped ahead of the clock: ./meter.ts) crosses
 * that period's thresholds as it starts; no call of the key need come then to announce them. This
 * waits for each day's start in the budget clock's zone (weeks and months start with a day) and
 * has the engine announce them then (`announceHeld`), and once after start-up's read when `atStart`
 * (PostgreSQL: ./shared.ts, after its first read). A timer, never work on a call's way. Returns
 * what stops it.
 */
export function watchHeldPeriods(engine: BudgetEngine, atStart: boolean): () => void {
  let closed = false
  let timer: NodeJS.Timeout | null = null
  let day = engine.clock.dayOf(Date.now()).start
  const check = (now: number) => {
    try {
      engine.announceHeld(now)
    } catch {
      // the next day's start checks again
    }
  }
  const arm = (now: number) => {
    const wait = Math.min(Math.max(engine.clock.dayOf(now).end - now, 1), MAX_WAIT_MS)
    timer = setTimeout(tick, wait)
    timer.unref()
  }
  const tick = () => {
    timer = null
    if (closed) return
    const now = Date.now()
    // A wait ended early (the clock stepped back) or within the same day (an hour's) waits on.
    const d = engine.clock.dayOf(now).start
    if (d > day) {
      day = d
      check(now)
    }
    arm(now)
  }
  // After the features that listen to the engine (../alerts) are installed, in the same start.
  const first = atStart ? setImmediate(() => !closed && check(Date.now())) : null
  arm(Date.now())
  return () => {
    closed = true
    if (first) clearImmediate(first)
    if (timer) clearTimeout(timer)
  }
}
