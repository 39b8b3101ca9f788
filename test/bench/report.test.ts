import { describe, expect, it } from 'vitest'
import { statMicros, threadKind } from './proxy-kit/child'
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

  it('splits a process\'s CPU by thread, as Node and V8 name their threads', () => {
    expect(threadKind('node', true)).toBe('main')
    expect(threadKind('WorkerThread', false)).toBe('worker')
    expect(threadKind('V8Worker', false)).toBe('v8')
    expect(threadKind('v8:ProfEvntProc', false)).toBe('v8')
    expect(threadKind('libuv-worker', false)).toBe('other')
    // utime 120 and stime 30 ticks (fields 14 and 15), a name with a space and a parenthesis in it.
    const line = '4242 (node (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 120 30 0 0 20 0 12 0 100 0 0'
    expect(statMicros(line)).toBe(1_500_000)
  })
})
