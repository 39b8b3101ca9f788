/**
 * Vitest setup (vitest.config.ts `setupFiles`): a test that starts within MARGIN_MS of midnight,
 * UTC or this machine's, waits until just after it. Many tests record a call "now" and then read
 * today's figures; one that straddled midnight would find its call on yesterday's side. The
 * midnight rollovers themselves are tested with fixed instants (spend, budgets, plans, DST), so
 * nothing is skipped by waiting. The wait uses Node's own timers, never a test's fake ones (a
 * test's own hooks and code run after this), and none is made under a clock faked for the file.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { beforeEach, vi } from 'vitest'

const MARGIN_MS = 20_000
const DAY_MS = 86_400_000

/** Milliseconds from `now` to the next midnight, UTC and in this machine's zone (the nearer). */
export function toNextMidnight(now: number): number {
  const utc = DAY_MS - (now % DAY_MS)
  const d = new Date(now)
  const local = new Date(d.getFullYear(), d.getMonth(), d.getDate() + 1).getTime() - now
  return Math.min(utc, local)
}

beforeEach(async () => {
  // A file that fakes the clock for all its tests has chosen its instants: nothing to wait for.
  if (vi.isFakeTimers()) return
  const left = toNextMidnight(Date.now())
  if (left <= MARGIN_MS) await sleep(left + 500)
})
