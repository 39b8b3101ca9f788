import { describe, expect, it } from 'vitest'
import { midnightWait, sinceMidnight, toNextMidnight } from './midnight'

describe("the tests' midnight wait (test/support/midnight.ts)", () => {
  it('measures the time to the nearer midnight, UTC or local', () => {
    const nearUtc = Date.UTC(2026, 11, 3, 23, 59, 50)
    expect(toNextMidnight(nearUtc)).toBeLessThanOrEqual(10_000)
    const noonUtc = Date.UTC(2026, 11, 3, 12, 0, 0)
    const d = new Date(noonUtc)
    const local = new Date(d.getFullYear(), d.getMonth(), d.getDate() + 1).getTime() - noonUtc
    expect(toNextMidnight(noonUtc)).toBe(Math.min(12 * 3_600_000, local))
  })

  it('waits past the minute after midnight, where a call recorded a minute back is yesterday’s', () => {
    const justAfter = Date.UTC(2026, 11, 8, 0, 0, 30)
    expect(sinceMidnight(justAfter)).toBeLessThanOrEqual(30_000)
    // From 00:00:30, until 00:01:30 (UTC, or sooner past a local midnight nearer still).
    expect(midnightWait(justAfter)).toBeGreaterThan(0)
    expect(midnightWait(justAfter)).toBeLessThanOrEqual(60_000)
    // From 23:59:50, past midnight and the minute after it.
    const justBefore = Date.UTC(2026, 11, 7, 23, 59, 50)
    expect(midnightWait(justBefore)).toBe(toNextMidnight(justBefore) + 90_000)
  })

  it('does not wait in the middle of the day', () => {
    const noonUtc = Date.UTC(2026, 11, 3, 12, 0, 0)
    // 0 unless this machine's own midnight is near 12:00 UTC (a zone 12 hours off).
    expect(midnightWait(noonUtc) === 0).toBe(toNextMidnight(noonUtc) > 20_000 && sinceMidnight(noonUtc) >= 90_000)
    expect(midnightWait(Date.UTC(2026, 11, 3, 0, 1, 31)) === 0).toBe(toNextMidnight(Date.UTC(2026, 11, 3, 0, 1, 31)) > 20_000 && sinceMidnight(Date.UTC(2026, 11, 3, 0, 1, 31)) >= 90_000)
  })
})
