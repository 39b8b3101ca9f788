import { afterEach, vi } from 'vitest'

export interface FakeDate {
  /** Fakes the machine's clock (Date only) and sets it to `at` (ISO 8601, or milliseconds). */
  start(at: string | number): void
  /** Sets the faked clock to `at` (ISO 8601, or milliseconds). */
  set(at: string | number): void
}

/**
 * The machine's clock as the budget tests at a period boundary set it (test/budgets/*midnight*,
 * *-ahead-*, *stepped-back*, the budgets answer's *-http ones): Date alone is faked, and it does not
 * move on its own (timers and I/O run in real time, so servers and PostgreSQL work as ever); it is
 * the real one again after each of the file's tests.
 */
export function useFakeDate(): FakeDate {
  afterEach(() => {
    vi.useRealTimers()
  })
  const set = (at: string | number) => {
    vi.setSystemTime(typeof at === 'string' ? Date.parse(at) : at)
  }
  return {
    start(at) {
      vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: false })
      set(at)
    },
    set,
  }
}
