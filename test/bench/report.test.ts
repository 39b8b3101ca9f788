import { describe, expect, it } from 'vitest'
import { formatTable, judge, type Row } from './report'

const r = (value: number, baseline: number | null, goal: string): Row => ({ name: 'x', value, baseline, goal, unit: 'ms' })

describe('bench figures table', () => {
  it('judges a goal as a ratio to the baseline when it ends in x', () => {
    expect(judge(r(1.1, 1, '<= 1.1x'))).toBe('met')
    expect(judge(r(1.2, 1, '<= 1.1x'))).toBe('NOT MET')
    expect(judge(r(990, 1000, '>= 1.0x'))).toBe('NOT MET')
    expect(judge(r(1000, 1000, '>= 1.0x'))).toBe('met')
  })

  it('judges an absolute goal against the value itself', () => {
    expect(judge(r(299, null, '< 300'))).toBe('met')
    expect(judge(r(300, null, '< 300'))).toBe('NOT MET')
    expect(judge(r(250_000, 10, '>= 200000'))).toBe('met')
  })

  it('does not judge what it cannot: prose goals, ratios without a baseline', () => {
    expect(judge(r(1, null, '<= 1.1x'))).toBe('-')
    expect(judge(r(1, 1, 'near the start figure'))).toBe('-')
  })

  it('prints each figure beside its baseline, ratio and goal', () => {
    const t = formatTable([{ name: 'start-up', value: 250, baseline: 50, goal: '< 300', unit: 'ms' }])
    expect(t).toContain('| start-up | 250 ms | 50.0 ms | 5.00x | < 300 | met |')
  })
})
