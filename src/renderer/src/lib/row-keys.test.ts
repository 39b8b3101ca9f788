import { describe, expect, it } from 'vitest'
import { rowKeys } from './row-keys'

describe('rowKeys', () => {
  it('gives rows whose texts hold the separator, and rows alike in every part, keys of their own', () => {
    const rows = [
      ['a|b', 'c', 'daily'],
      ['a', 'b|c', 'daily'],
      ['a:b', null, 'daily'],
      ['a', 'b:null', 'daily'],
      ['sk-…0001', null, 'daily'],
      ['sk-…0001', null, 'daily'],
      ['sk-…0001', null, 'daily'],
    ]
    const keys = rowKeys(rows, (r) => r)
    expect(new Set(keys).size).toBe(rows.length)
    // The first of rows alike keeps the key it had alone, so a row's key does not move when a twin comes.
    expect(keys[4]).toBe(rowKeys([rows[4]], (r) => r)[0])
  })
})
