import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { Throttle, realTimers } from './throttle'

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 })
})
afterEach(() => {
  vi.useRealTimers()
})

describe('Throttle', () => {
  it('runs the first request on the next tick, not inside the caller', () => {
    const fn = vi.fn()
    new Throttle(fn, 1000, realTimers).request()
    expect(fn).toHaveBeenCalledTimes(0)
    vi.advanceTimersByTime(0)
    expect(fn).toHaveBeenCalledTimes(1)
  })

  it('merges a burst into one trailing run, no later than the interval after the first request', () => {
    const fn = vi.fn()
    const t = new Throttle(fn, 1000, realTimers)
    t.request() // leading run at 0
    vi.advanceTimersByTime(0)
    for (let i = 0; i < 5000; i++) {
      vi.advanceTimersByTime(0.1)
      t.request()
    }
    expect(fn).toHaveBeenCalledTimes(1)
    vi.advanceTimersByTime(1000 - 500) // 1000 ms after the leading run
    expect(fn).toHaveBeenCalledTimes(2)
    vi.advanceTimersByTime(5000)
    expect(fn).toHaveBeenCalledTimes(2)
  })

  it('never runs more than once per interval under a steady stream', () => {
    const fn = vi.fn()
    const t = new Throttle(fn, 1000, realTimers)
    for (let ms = 0; ms < 10_000; ms += 10) {
      t.request()
      vi.advanceTimersByTime(10)
    }
    vi.advanceTimersByTime(1000)
    // 10 s of requests: one run per second, plus the trailing one.
    expect(fn.mock.calls.length).toBeLessThanOrEqual(11)
    expect(fn.mock.calls.length).toBeGreaterThanOrEqual(10)
  })

  it('a request after a quiet interval runs at once again', () => {
    const fn = vi.fn()
    const t = new Throttle(fn, 1000, realTimers)
    t.request()
    vi.advanceTimersByTime(1500)
    t.request()
    vi.advanceTimersByTime(0)
    expect(fn).toHaveBeenCalledTimes(2)
  })

  it('does nothing after stop', () => {
    const fn = vi.fn()
    const t = new Throttle(fn, 1000, realTimers)
    t.request()
    vi.advanceTimersByTime(0)
    t.request()
    t.stop()
    vi.advanceTimersByTime(2000)
    t.request()
    expect(fn).toHaveBeenCalledTimes(1)
  })
})
