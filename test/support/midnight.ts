/**
 * Vitest setup (vitest.config.ts `setupFiles`): a test (or a file's set-up, beforeAll) that starts
 * within BEFORE_MS of midnight, UTC or this machine's, or within AFTER_MS after it, waits until
 * AFTER_MS past it. Many tests record a call "now" or up to a minute back (the dashboard's set-ups
 * record theirs in beforeAll) and then read today's figures; one that straddled midnight, or
 * recorded its call a minute back just after it, would find the call on yesterday's side (a clean-
 * clone run past midnight: the dashboard showed "Spend today $0.00" for a call made 60 s before
 * 00:00:30). The midnight rollovers themselves are tested with fixed instants (spend, budgets,
 * plans, DST), so nothing is skipped by waiting. The wait uses Node's own timers, never a test's
 * fake ones (a test's own hooks and code run after this), and none is made under a clock faked for the file.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { beforeAll, beforeEach, vi } from 'vitest'

const BEFORE_MS = 20_000
/** Longer than the furthest back a test records a call it counts as today's (a minute) and its set-up's time. */
const AFTER_MS = 90_000
const DAY_MS = 86_400_000

/** Milliseconds from `now` to the next midnight, UTC and in this machine's zone (the nearer). */
export function toNextMidnight(now: number): number {
  const utc = DAY_MS - (now % DAY_MS)
  const d = new Date(now)
  const local = new Date(d.getFullYear(), d.getMonth(), d.getDate() + 1).getTime() - now
  return Math.min(utc, local)
}

/** Milliseconds since the last midnight, UTC and in this machine's zone (the nearer). */
export function sinceMidnight(now: number): number {
  const d = new Date(now)
  const local = now - new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime()
  return Math.min(now % DAY_MS, local)
}

/** How long a test starting at `now` waits: until AFTER_MS past the midnight it is close to (0: not close to one). */
export function midnightWait(now: number): number {
  const left = toNextMidnight(now)
  if (left <= BEFORE_MS) return left + AFTER_MS
  const since = sinceMidnight(now)
  return since < AFTER_MS ? AFTER_MS - since : 0
}

async function clearOfMidnight(): Promise<void> {
  // A file that fakes the clock for all its tests has chosen its instants: nothing to wait for.
  if (vi.isFakeTimers()) return
  const wait = midnightWait(Date.now())
  if (wait > 0) await sleep(wait)
}

beforeAll(clearOfMidnight, AFTER_MS + BEFORE_MS + 10_000)
beforeEach(clearOfMidnight, AFTER_MS + BEFORE_MS + 10_000)
