import { describe, expect, it } from 'vitest'
import { ruleLabel } from './budgets'
import { BoundedLabel, OTHER } from './labels'

describe('BoundedLabel', () => {
  it('keeps the first values as they are and reports every later new one as other', () => {
    const l = new BoundedLabel(2)
    expect(l.value('gpt-4o')).toBe('gpt-4o')
    expect(l.value('claude')).toBe('claude')
    expect(l.value('typo-model')).toBe(OTHER)
    expect(l.value('gpt-4o')).toBe('gpt-4o')
  })

  it('cuts long values', () => {
    expect(new BoundedLabel(5).value('m'.repeat(500))).toBe('m'.repeat(100))
  })
})

describe('ruleLabel', () => {
  it('shows a prefix rule as written and a whole-key rule only as its hint', () => {
    expect(ruleLabel({ api_key_pattern: 'sk-dev-*' })).toBe('sk-dev-*')
    expect(ruleLabel({ api_key_pattern: '*' })).toBe('*')
    expect(ruleLabel({ api_key_pattern: 'sk-proj-secret-key-9f3a' })).toBe('sk-…9f3a')
  })
})

describe('BoundedLabel with values that are not valid Unicode', () => {
  it('cuts before a character outside the BMP rather than through it', () => {
    const l = new BoundedLabel(5)
    expect(l.value(`${'m'.repeat(99)}😀x`)).toBe('m'.repeat(99))
    expect(l.value(`${'m'.repeat(98)}😀x`)).toBe(`${'m'.repeat(98)}😀`)
  })

  it('shows a lone half of a pair as U+FFFD, one value with U+FFFD itself', () => {
    const l = new BoundedLabel(5)
    expect(l.value('half-\ud83d')).toBe('half-\ufffd')
    expect(l.value('half-\ufffd')).toBe('half-\ufffd')
    expect(l.value('\ude00-low')).toBe('\ufffd-low')
  })
})
