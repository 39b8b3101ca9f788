import { describe, expect, it } from 'vitest'
import { formatUsd } from './money'

describe('formatUsd', () => {
  it('shows cents with a dollar sign', () => {
    expect(formatUsd(0)).toBe('$0.00')
    expect(formatUsd(4.1)).toBe('$4.10')
    expect(formatUsd(12.345678)).toBe('$12.35')
  })
  it('groups thousands', () => {
    expect(formatUsd(1234567.891)).toBe('$1,234,567.89')
  })
  it('never shows a real but tiny spend as zero', () => {
    expect(formatUsd(0.000_012)).toBe('<$0.01')
    expect(formatUsd(0.0049)).toBe('<$0.01')
    expect(formatUsd(0.005)).toBe('$0.01')
  })
  it('says so when the amount is unknown', () => {
    expect(formatUsd(Number.NaN)).toBe('$—')
    expect(formatUsd(-0)).toBe('$0.00')
  })
})
