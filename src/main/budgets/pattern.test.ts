import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { bySpecificity, matches, patternProblem } from './pattern'

describe('patterns', () => {
  it('accepts a whole key, a prefix with one trailing *, and * alone', () => {
    for (const p of ['sk-abc123', 'sk-dev-*', '*']) expect(patternProblem(p)).toBeNull()
  })

  it('rejects a * anywhere but the end, empty patterns and non-header characters', () => {
    expect(patternProblem('sk-*-dev')).toMatch(/only allowed once, at the end/)
    expect(patternProblem('**')).toMatch(/only allowed once/)
    expect(patternProblem('*sk')).toMatch(/at the end/)
    expect(patternProblem('')).toMatch(/non-empty/)
    expect(patternProblem('sk dev*')).toMatch(/ASCII/)
    expect(patternProblem('sk-é*')).toMatch(/ASCII/)
  })

  it('matches exactly or by prefix', () => {
    expect(matches('sk-a', 'sk-a')).toBe(true)
    expect(matches('sk-a', 'sk-ab')).toBe(false)
    expect(matches('sk-a*', 'sk-ab')).toBe(true)
    expect(matches('sk-a*', 'sk-a')).toBe(true)
    expect(matches('sk-a*', 'sk-b')).toBe(false)
    expect(matches('*', '')).toBe(true)
  })

  it('orders exact before any prefix and longer prefixes before shorter', () => {
    const sorted = ['*', 'sk-*', 'sk-dev-key', 'sk-dev-*'].sort(bySpecificity)
    expect(sorted).toEqual(['sk-dev-key', 'sk-dev-*', 'sk-*', '*'])
  })

  it('a * pattern matches exactly the keys that start with its prefix', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (prefix, key) => {
        expect(matches(`${prefix}*`, key)).toBe(key.startsWith(prefix))
        expect(matches(`${prefix}*`, prefix + key)).toBe(true)
      }),
    )
  })
})

describe('regular-expression-looking patterns', () => {
  it('are refused with a word, since they would be taken literally and match nothing', () => {
    for (const p of ['sk-.*', '^sk-', '^sk-.*$', 'sk-[a-z]+', 'sk-(dev|prod)-*', 'sk-\\w+', 'sk-.+', 'key$']) {
      expect(patternProblem(p), p).toMatch(/looks like a regular expression/)
    }
  })

  it('still accepts real keys and prefixes, base64 ones and Google tokens included', () => {
    for (const p of ['sk-dev-*', 'sk-proj-AbC_12-xyz', 'ya29.*', 'AIzaSyA-b_c', 'abc+def/ghi=', 'sk-or-v1-*']) expect(patternProblem(p), p).toBeNull()
  })
})
