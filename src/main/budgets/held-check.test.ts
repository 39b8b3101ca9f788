import { afterEach, describe, expect, it, vi } from 'vitest'
import { PeriodClock } from '../time/zone'
import type { BudgetEngine } from './engine'
import { MAX_WAIT_MS, watchHeldPeriods } from './held-check'

afterEach(() => {
  vi.useRealTimers()
})

/** An engine as the watcher sees it: its clock, and when it was asked to announce held periods' thresholds. */
function engine(tz: string) {
  const at: string[] = []
  const e = { clock: new PeriodClock(tz, 1), announceHeld: (now: number) => void at.push(new Date(now).toISOString()) }
  return { e: e as unknown as BudgetEngine, at }
}

describe('watchHeldPeriods', () => {
  it("checks at each day's start in the zone, across a DST change (a 23-hour day), and once after start-up", () => {
    vi.useFakeTimers()
    // Saturday noon in New York; clocks go forward at 2:00 on Sunday March 8th 2026.
    vi.setSystemTime(Date.parse('2026-03-07T17:00:00Z'))
    const { e, at } = engine('America/New_York')
    const stop = watchHeldPeriods(e, true)
    vi.advanceTimersByTime(0)
    expect(at).toEqual(['2026-03-07T17:00:00.000Z'])
    vi.advanceTimersByTime(48 * 3600_000)
    stop()
    expect(at).toEqual(['2026-03-07T17:00:00.000Z', '2026-03-08T05:00:00.000Z', '2026-03-09T04:00:00.000Z'])
  })

  it('never waits longer than an hour: a clock stepped on across days is checked within the hour', () => {
    vi.useFakeTimers()
    vi.setSystemTime(Date.parse('2026-03-14T00:30:00Z'))
    const { e, at } = engine('UTC')
    const waits: number[] = []
    const setTimer = globalThis.setTimeout
    const spy = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: () => void, ms: number) => {
      waits.push(ms)
      return setTimer(fn, ms)
    }) as typeof setTimeout)
    const stop = watchHeldPeriods(e, false)
    // Woken from a sleep 40 days later (as a timer's wait, more than 2^31-1 ms past).
    vi.setSystemTime(Date.parse('2026-04-23T00:30:00Z'))
    vi.advanceTimersByTime(MAX_WAIT_MS)
    stop()
    spy.mockRestore()
    expect(at).toEqual(['2026-04-23T01:30:00.000Z'])
    expect(Math.max(...waits)).toBeLessThanOrEqual(MAX_WAIT_MS)
  })

  it('stops: no check after', () => {
    vi.useFakeTimers()
    vi.setSystemTime(Date.parse('2026-03-14T23:59:00Z'))
    const { e, at } = engine('UTC')
    watchHeldPeriods(e, true)()
    vi.advanceTimersByTime(2 * 3600_000)
    expect(at).toEqual([])
  })
})
