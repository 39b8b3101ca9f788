import { describe, expect, it } from 'vitest'
import { toNextMidnight } from './midnight'

describe("the tests' midnight wait (test/support/midnight.ts)", () => {
  it('measures the time to the nearer midnight, UTC or local', () => {
    const nearUtc = Date.UTC(2026, 11, 3, 23, 59, 50)
    expect(toNextMidnight(nearUtc)).toBeLessThanOrEqual(10_000)
    const noonUtc = Date.UTC(2026, 11, 3, 12, 0, 0)
    const d = new Date(noonUtc)
    const local = new Date(d.getFullYear(), d.getMonth(), d.getDate() + 1).getTime() - noonUtc
    expect(toNextMidnight(noonUtc)).toBe(Math.min(12 * 3_600_000, local))
  })
})
