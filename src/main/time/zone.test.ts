import { describe, expect, it } from 'vitest'
import { PeriodClock, isValidTimeZone, localParts, machineTimeZone, sameTimeZone, startOfDay, startOfMonth, startOfNextDay, startOfNextMonth, startOfWeek } from './zone'

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

  it('places days of the years 0 to 99 in those years, in any zone', () => {
    // Date.UTC reads a year 0 to 99 as 1900 to 1999; Intl names the year 0 "1 BC".
    for (const tz of ['UTC', 'Europe/Berlin', 'America/New_York']) {
      for (const iso of ['0000-06-01T12:00:00Z', '0001-01-01T12:00:00Z', '0050-03-10T12:00:00Z', '0099-12-31T12:00:00Z']) {
        const ts = Date.parse(iso)
        expect(localParts(ts, tz), `${tz} ${iso}`).toMatchObject({ year: Number(iso.slice(0, 4)), month: Number(iso.slice(5, 7)), day: Number(iso.slice(8, 10)) })
        const start = startOfDay(ts, tz)
        expect(ts - start, `${tz} ${iso}`).toBeGreaterThan(0)
        expect(ts - start, `${tz} ${iso}`).toBeLessThan(86_400_000)
        expect(localParts(start, tz), `${tz} ${iso}`).toMatchObject({ year: Number(iso.slice(0, 4)), hour: 0, minute: 0, second: 0 })
      }
    }
    // 10 March 50 was a Thursday: its week (from Monday) began on the 7th.
    expect(new Date(startOfWeek(Date.parse('0050-03-10T12:00:00Z'), 'UTC', 1)).toISOString()).toBe('0050-03-07T00:00:00.000Z')
  })

  it('validates zone names', () => {
    expect(isValidTimeZone('Europe/Berlin')).toBe(true)
    expect(isValidTimeZone('Mars/Olympus')).toBe(false)
  })

  it('computes UTC without Intl exactly as Intl does', () => {
    // 'Etc/Universal' is UTC too but not among the fast path's names: it goes through Intl.
    const start = Date.parse('1999-12-31T22:00:00.000Z')
    for (let i = 0; i < 2000; i++) {
      const ts = start + i * 7_919_993 + (i % 1000) // across days, months, a leap day, odd milliseconds
      for (const utc of ['UTC', 'Etc/UTC', 'GMT', 'Etc/GMT']) expect(localParts(ts, utc)).toEqual(localParts(ts, 'Etc/Universal'))
    }
    const ts = Date.parse('2028-02-29T23:59:59.999Z')
    expect(startOfDay(ts, 'UTC')).toBe(startOfDay(ts, 'Etc/Universal'))
    expect(startOfNextMonth(ts, 'UTC')).toBe(Date.parse('2028-03-01T00:00:00Z'))
    expect(startOfWeek(ts, 'UTC', 1)).toBe(startOfWeek(ts, 'Etc/Universal', 1))
    expect(isValidTimeZone('UTC')).toBe(true)
    expect(isValidTimeZone('Etc/Universal')).toBe(true)
    expect(isValidTimeZone('Mars/Olympus_Mons')).toBe(false)
  })

  it("names the machine's zone as Intl does, with or without TZ", () => {
    const saved = process.env.TZ
    try {
      for (const tz of ['UTC', ':UTC', 'Etc/UTC', 'Europe/Berlin', 'America/New_York']) {
        process.env.TZ = tz
        expect(machineTimeZone(), tz).toBe(Intl.DateTimeFormat().resolvedOptions().timeZone)
      }
      delete process.env.TZ
      expect(machineTimeZone()).toBe(Intl.DateTimeFormat().resolvedOptions().timeZone)
    } finally {
      if (saved === undefined) delete process.env.TZ
      else process.env.TZ = saved
    }
  })
})

describe('sameTimeZone', () => {
  it('knows one zone by its names, and tells zones apart', () => {
    expect(sameTimeZone('UTC', 'Etc/UTC')).toBe(true)
    expect(sameTimeZone('Europe/Berlin', 'Europe/Berlin')).toBe(true)
    expect(sameTimeZone('UTC', 'Europe/Berlin')).toBe(false)
    expect(sameTimeZone('America/New_York', 'Not/AZone')).toBe(false)
  })
})
