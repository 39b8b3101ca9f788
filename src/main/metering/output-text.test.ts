import { describe, expect, it } from 'vitest'
import { OutputText } from './output-text'

describe('OutputText', () => {
  it('keeps text in order, as an array of strings would', () => {
    const t = new OutputText()
    for (const s of ['a', 'bc', '', 'déf']) t.push(s)
    expect(t.join('')).toBe('abcdéf')
    expect(t.dropped).toBe(0)
    expect(t.scale).toBeUndefined()
  })

  it('keeps at most MAX_CHARS characters and counts the rest', () => {
    const old = OutputText.MAX_CHARS
    OutputText.MAX_CHARS = 10
    try {
      const t = new OutputText()
      for (let i = 0; i < 10_000; i++) t.push('xyz')
      expect(t.join('')).toBe('xyzxyzxyzx')
      expect(t.dropped).toBe(30_000 - 10)
      // The whole text was this many times the part kept: the estimate is scaled by it.
      expect(t.scale).toBe(30_000 / 10)
    } finally {
      OutputText.MAX_CHARS = old
    }
  })

  it('joins many small pieces as they come', () => {
    const t = new OutputText()
    for (let i = 0; i < 10_000; i++) t.push('w ')
    expect(t.length).toBeLessThan(4096)
    expect(t.join('')).toBe('w '.repeat(10_000))
  })
})
