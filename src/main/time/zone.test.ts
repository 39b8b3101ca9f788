import { describe, expect, it } from 'vitest'
import { PeriodClock, isValidTimeZone, startOfDay, startOfMonth, startOfNextDay, startOfNextMonth } from './zone'

describe('time zones', () => {
  it('finds local midnight in a zone east of UTC', () => {
    // 2026-11-21T00:30 in Berlin (UTC+1) is 2026-11-20T23:30Z
    const ts = Date.parse('2026-11-20T23:30:00Z')
    expect(new Date(startOfDay(ts, 'Europe/Berlin')).toISOString()).toBe('2026-11-20T23:00:00.000Z')
    expect(new Date(startOfNextDay(ts, 'Europe/Berlin')).toISOString()).toBe('2026-11-21T23:00:00.000Z')
    expect(new Date(startOfDay(ts, 'UTC')).toISOString()).toBe('2026-11-20T00:00:00.000Z')
  })

  it('handles days that are 23 and 25 hours long', () => {
    // Europe/Berlin springs forward on 2026-03-29 and falls back on 2026-10-25
    const spring = Date.parse('2026-03-29T12:00:00Z')
    expect(startOfNextDay(spring, 'Europe/Berlin') - startOfDay(spring, 'Europe/Berlin')).toBe(23 * 3600_000)
    const fall = Date.parse('2026-10-25T12:00:00Z')
    expect(startOfNextDay(fall, 'Europe/Berlin') - startOfDay(fall, 'Europe/Berlin')).toBe(25 * 3600_000)
  })

  it('finds month boundaries west of UTC', () => {
    const ts = Date.parse('2026-12-01T03:00:00Z') // still Nov 30 in New York
    expect(new Date(startOfMonth(ts, 'America/New_York')).toISOString()).toBe('2026-11-01T04:00:00.000Z')
    expect(new Date(startOfNextMonth(ts, 'America/New_York')).toISOString()).toBe('2026-12-01T05:00:00.000Z')
  })

  it('rolls the cached period over', () => {
    const clock = new PeriodClock('UTC')
    const a = clock.dayOf(Date.parse('2026-11-21T23:59:59Z'))
    expect(new Date(a.start).toISOString()).toBe('2026-11-21T00:00:00.000Z')
    const b = clock.dayOf(Date.parse('2026-11-22T00:00:01Z'))
    expect(new Date(b.start).toISOString()).toBe('2026-11-22T00:00:00.000Z')
  })

  it('validates zone names', () => {
    expect(isValidTimeZone('Europe/Berlin')).toBe(true)
    expect(isValidTimeZone('Mars/Olympus')).toBe(false)
  })
})
