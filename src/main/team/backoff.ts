import { MAX_TIMER_MS } from '../config/schema'

/** The first retry's wait; each next one doubles, up to the configured longest. */
export const FIRST_BACKOFF_MS = 1000

/**
 * The wait before retry number `failures` (1 for the first): exponential, capped at `maxMs`,
 * with "equal jitter" (half fixed, half random) so that many desktops coming back after a team
 * server outage do not all retry at the same instant. A server's Retry-After is honoured: the
 * wait is never shorter than it asked, up to the longest a timer can wait (a longer one would
 * fire at once, and a Retry-After of a month made a retry every millisecond).
 */
export function backoffMs(failures: number, maxMs: number, retryAfterMs: number | null = null, random = Math.random): number {
  const exp = Math.min(maxMs, FIRST_BACKOFF_MS * 2 ** Math.min(30, Math.max(0, failures - 1)))
  const jittered = exp / 2 + random() * (exp / 2)
  return Math.round(Math.min(MAX_TIMER_MS, Math.max(jittered, retryAfterMs ?? 0)))
}
