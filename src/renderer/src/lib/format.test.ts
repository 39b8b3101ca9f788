import { describe, expect, it } from 'vitest'
import { ariaPct, formatAgo, formatBucket, formatCountdown, formatDuration, formatMs, formatPct, formatTokens, formatUsd, formatUsdExact, formatUsdPair } from './format'

describe('formatUsd', () => {
  it('keeps small amounts readable to two significant digits', () => {
    expect(formatUsd(0.0042)).toBe('$0.0042')
    expect(formatUsd(0.004213579)).toBe('$0.0042')
    expect(formatUsd(0.000018)).toBe('$0.000018')
    expect(formatUsd(0)).toBe('$0.00')
  })
  it('shows cents from one cent up, and compacts thousands', () => {
    expect(formatUsd(0.01)).toBe('$0.01')
    expect(formatUsd(0.4249)).toBe('$0.42')
    expect(formatUsd(12.344)).toBe('$12.34')
    expect(formatUsd(999.99)).toBe('$999.99')
    expect(formatUsd(1234)).toBe('$1.2k')
    expect(formatUsd(12_500)).toBe('$12.5k')
    expect(formatUsd(3_400_000)).toBe('$3.4M')
  })
  it('is a dash for values that are not numbers', () => {
    expect(formatUsd(Number.NaN)).toBe('—')
  })
})

describe('formatUsdExact', () => {
  it('shows every digit the server sent', () => {
    expect(formatUsdExact(0.004213579)).toBe('$0.004213579')
    expect(formatUsdExact(0.0000001)).toBe('$0.0000001')
    expect(formatUsdExact(1234.5)).toBe('$1,234.50')
  })
})

describe('other figures', () => {
  it('formats tokens', () => {
    expect(formatTokens(1149)).toBe('1,149')
    expect(formatTokens(12_345)).toBe('12.3k')
    expect(formatTokens(1_200_000)).toBe('1.2M')
  })
  it('formats ratios', () => {
    expect(formatPct(0)).toBe('0%')
    expect(formatPct(0.0004)).toBe('<0.1%')
    expect(formatPct(0.0123)).toBe('1.2%')
    expect(formatPct(0.25)).toBe('25%')
    expect(formatPct(1)).toBe('100%')
  })
  it('never reads 100% for a ratio short of 1', () => {
    expect(formatPct(0.994)).toBe('99%')
    expect(formatPct(0.996)).toBe('99.6%')
    expect(formatPct(0.997)).toBe('99.7%')
    expect(formatPct(0.99999)).toBe('99.9%')
    expect(formatPct(1.004)).toBe('100%')
  })
  it("gives a progress bar's aria-valuenow to a tenth, never 100 short of the whole", () => {
    expect(ariaPct(0)).toBe(0)
    expect(ariaPct(0.8)).toBe(80)
    expect(ariaPct(0.996)).toBe(99.6)
    expect(ariaPct(0.9996)).toBe(99.9)
    expect(ariaPct(1)).toBe(100)
    expect(ariaPct(2.5)).toBe(100)
  })
  it('formats latencies and durations', () => {
    expect(formatMs(842.4)).toBe('842 ms')
    expect(formatMs(1234)).toBe('1.2 s')
    expect(formatMs(null)).toBe('—')
    expect(formatDuration(45_000)).toBe('45s')
    expect(formatDuration(125_000)).toBe('2m 5s')
    expect(formatDuration(12 * 60_000)).toBe('12m')
    expect(formatDuration(64 * 60_000)).toBe('1h 4m')
    expect(formatDuration(51 * 3_600_000)).toBe('2d 3h')
  })
  it('says how long ago', () => {
    const now = Date.parse('2026-11-21T18:00:00Z')
    expect(formatAgo('2026-11-21T17:59:58Z', now)).toBe('just now')
    expect(formatAgo('2026-11-21T17:55:00Z', now)).toBe('5m ago')
    expect(formatAgo('2026-11-21T15:00:00Z', now)).toBe('3h ago')
  })
  it('labels buckets by day for long windows and by time for short ones', () => {
    expect(formatBucket('2026-11-21T00:00:00Z', 86_400, 30 * 86_400)).toMatch(/^Nov (20|21|22)$/)
    expect(formatBucket('2026-11-21T14:05:00Z', 60, 3600)).toMatch(/^\d\d:05$/)
    expect(formatBucket('2026-11-21T14:00:00Z', 3600, 7 * 86_400)).toMatch(/^Nov \d\d \d\d:00$/)
  })
})

describe('formatCountdown', () => {
  it('never reads 0m before the reset, and rounds minutes up', () => {
    expect(formatCountdown(20_000)).toBe('resets in <1m')
    expect(formatCountdown(59_999)).toBe('resets in <1m')
    expect(formatCountdown(60_000)).toBe('resets in 1m')
    expect(formatCountdown(61_000)).toBe('resets in 2m')
    expect(formatCountdown((4 * 60 + 12) * 60_000)).toBe('resets in 4h 12m')
    expect(formatCountdown((2 * 1440 + 3 * 60) * 60_000)).toBe('resets in 2d 3h 0m')
    expect(formatCountdown(0)).toBe('resetting')
    expect(formatCountdown(-5)).toBe('resetting')
  })
})

describe('formatUsdPair', () => {
  it('prints a budget spend and its limit in full dollars, different whenever they differ', () => {
    expect(formatUsdPair(9960, 10000)).toEqual(['$9,960.00', '$10,000.00'])
    expect(formatUsdPair(10040, 10000)).toEqual(['$10,040.00', '$10,000.00'])
    expect(formatUsdPair(999.999, 1000)).toEqual(['$999.999', '$1,000.00'])
    expect(formatUsdPair(5, 5)).toEqual(['$5.00', '$5.00'])
    expect(formatUsdPair(0.0012, 0.000001)).toEqual(['$0.0012', '$0.000001'])
  })
})
