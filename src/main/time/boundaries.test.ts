import { describe, expect, it } from 'vitest'
import { PeriodClock, localParts } from './zone'

const iso = (t: number) => new Date(t).toISOString()
const wall = (t: number, tz: string) => {
  const p = localParts(t, tz)
  const pad = (n: number) => String(n).padStart(2, '0')
  return `${p.year}-${pad(p.month)}-${pad(p.day)} ${pad(p.hour)}:${pad(p.minute)}`
}

/** A period is right when its start is on its day and the second before it is not, and its end is the next one's start. */
function expectDay(tz: string, at: string, start: string, hours: number) {
  const clock = new PeriodClock(tz)
  const d = clock.dayOf(Date.parse(at))
  expect(iso(d.start), `${tz} ${at} start`).toBe(start)
  expect((d.end - d.start) / 3600_000, `${tz} ${at} length`).toBe(hours)
  expect(wall(d.start - 1, tz).slice(0, 10), `${tz}: the instant before the start is the day before`).not.toBe(wall(d.start, tz).slice(0, 10))
  // The day after begins where this one ends, and the day before ends where this one begins.
  expect(clock.dayOf(d.end).start).toBe(d.end)
  expect(clock.dayOf(d.start - 1).end).toBe(d.start)
}

describe('PeriodClock at DST changes and odd offsets', () => {
  it('has days of 23 and 25 hours where the change is in the night', () => {
    expectDay('Europe/Berlin', '2026-03-29T12:00:00Z', '2026-03-28T23:00:00.000Z', 23)
    expectDay('Europe/Berlin', '2026-10-25T12:00:00Z', '2026-10-24T22:00:00.000Z', 25)
    expectDay('America/New_York', '2026-03-08T12:00:00Z', '2026-03-08T05:00:00.000Z', 23)
    expectDay('America/New_York', '2026-11-01T12:00:00Z', '2026-11-01T04:00:00.000Z', 25)
    // Lord Howe moves its clocks by 30 minutes.
    expectDay('Australia/Lord_Howe', '2026-04-05T06:00:00Z', '2026-04-04T13:00:00.000Z', 24.5)
    expectDay('Australia/Lord_Howe', '2026-10-04T06:00:00Z', '2026-10-03T13:30:00.000Z', 23.5)
    // Chatham: +12:45 / +13:45.
    expectDay('Pacific/Chatham', '2026-04-05T06:00:00Z', '2026-04-04T10:15:00.000Z', 25)
    expectDay('Pacific/Chatham', '2026-09-27T06:00:00Z', '2026-09-26T11:15:00.000Z', 23)
    // Kathmandu: +05:45, no DST.
    expectDay('Asia/Kathmandu', '2026-03-29T00:00:00Z', '2026-03-28T18:15:00.000Z', 24)
  })

  it('begins a day at 01:00 where the clocks spring forward at midnight, west of UTC too', () => {
    // Chile: 2026-09-06 00:00 (-04) becomes 01:00 (-03); the day is 23 hours from 01:00.
    expectDay('America/Santiago', '2026-09-06T12:00:00Z', '2026-09-06T04:00:00.000Z', 23)
    expectDay('America/Santiago', '2026-09-05T12:00:00Z', '2026-09-05T04:00:00.000Z', 24)
    // Cuba: 2026-03-08 00:00 (-05) becomes 01:00 (-04).
    expectDay('America/Havana', '2026-03-08T12:00:00Z', '2026-03-08T05:00:00.000Z', 23)
    expectDay('America/Havana', '2026-11-01T12:00:00Z', '2026-11-01T04:00:00.000Z', 25)
    // Brazil (2018) and Lebanon (2022), historically.
    expectDay('America/Sao_Paulo', '2018-11-04T12:00:00Z', '2018-11-04T03:00:00.000Z', 23)
    expectDay('Asia/Beirut', '2022-03-27T12:00:00Z', '2022-03-26T22:00:00.000Z', 23)
    // Chile falls back at midnight: 2026-04-05 00:00 (-03) is 2026-04-04 23:00 (-04) again; the 4th has 25 hours.
    expectDay('America/Santiago', '2026-04-04T12:00:00Z', '2026-04-04T03:00:00.000Z', 25)
    expectDay('America/Santiago', '2026-04-05T12:00:00Z', '2026-04-05T04:00:00.000Z', 24)
  })

  it('begins a month on a day that begins at 01:00', () => {
    // September 2026 in Santiago holds the change at midnight; the month itself starts and ends normally.
    const clock = new PeriodClock('America/Santiago')
    const sep = clock.monthOf(Date.parse('2026-09-15T12:00:00Z'))
    expect(iso(sep.start)).toBe('2026-09-01T04:00:00.000Z')
    expect(iso(sep.end)).toBe('2026-10-01T03:00:00.000Z')
    // Week containing the change (Monday 2026-08-31 to Monday 2026-09-07): 167 hours.
    const wk = clock.weekOf(Date.parse('2026-09-06T12:00:00Z'))
    expect(iso(wk.start)).toBe('2026-08-31T04:00:00.000Z')
    expect(iso(wk.end)).toBe('2026-09-07T03:00:00.000Z')
    // A week that starts on the day of the change (week_start: sunday) begins at 01:00.
    const sun = new PeriodClock('America/Santiago', 0).weekOf(Date.parse('2026-09-08T12:00:00Z'))
    expect(iso(sun.start)).toBe('2026-09-06T04:00:00.000Z')
    expect(wall(sun.start, 'America/Santiago')).toBe('2026-09-06 01:00')
  })

  it('starts a week at local midnight on each week_start day, across a DST change', () => {
    // Wednesday 2026-11-04 12:00 in New York; the change was on Sunday 2026-11-01.
    const at = Date.parse('2026-11-04T17:00:00Z')
    const expected: Record<number, [string, string]> = {
      0: ['2026-11-01T04:00:00.000Z', '2026-11-08T05:00:00.000Z'], // Sunday: 169 hours (the 25-hour day)
      1: ['2026-11-02T05:00:00.000Z', '2026-11-09T05:00:00.000Z'],
      2: ['2026-11-03T05:00:00.000Z', '2026-11-10T05:00:00.000Z'],
      3: ['2026-11-04T05:00:00.000Z', '2026-11-11T05:00:00.000Z'],
      4: ['2026-10-29T04:00:00.000Z', '2026-11-05T05:00:00.000Z'],
      5: ['2026-10-30T04:00:00.000Z', '2026-11-06T05:00:00.000Z'],
      6: ['2026-10-31T04:00:00.000Z', '2026-11-07T05:00:00.000Z'],
    }
    for (let ws = 0; ws < 7; ws++) {
      const w = new PeriodClock('America/New_York', ws).weekOf(at)
      expect([iso(w.start), iso(w.end)], `week_start ${ws}`).toEqual(expected[ws])
      expect(new Date(Date.parse(wall(w.start, 'America/New_York').slice(0, 10))).getUTCDay()).toBe(ws)
      expect(wall(w.start, 'America/New_York').slice(11)).toBe('00:00')
    }
  })

  it('ends months on their last day, leap day included', () => {
    const clock = new PeriodClock('Europe/Berlin')
    const feb = clock.monthOf(Date.parse('2028-02-29T22:59:59Z')) // 23:59:59 on the leap day in Berlin
    expect(iso(feb.start)).toBe('2028-01-31T23:00:00.000Z')
    expect(iso(feb.end)).toBe('2028-02-29T23:00:00.000Z')
    const leap = clock.dayOf(Date.parse('2028-02-29T12:00:00Z'))
    expect(iso(leap.start)).toBe('2028-02-28T23:00:00.000Z')
    const mar = clock.monthOf(Date.parse('2026-03-31T21:59:59Z')) // March holds the spring change
    expect((mar.end - mar.start) / 3600_000).toBe(31 * 24 - 1)
    const ny = new PeriodClock('America/New_York').monthOf(Date.parse('2026-11-15T12:00:00Z'))
    expect((ny.end - ny.start) / 3600_000).toBe(30 * 24 + 1)
  })

  it('does not depend on the machine zone (TZ)', () => {
    // Vitest runs in one process; Date's local methods are what TZ would change. The clock uses none.
    const saved = process.env.TZ
    try {
      process.env.TZ = 'Pacific/Kiritimati'
      const d = new PeriodClock('America/New_York').dayOf(Date.parse('2026-11-01T12:00:00Z'))
      expect(iso(d.start)).toBe('2026-11-01T04:00:00.000Z')
      expect(d.end - d.start).toBe(25 * 3600_000)
    } finally {
      if (saved === undefined) delete process.env.TZ
      else process.env.TZ = saved
    }
  })
})
