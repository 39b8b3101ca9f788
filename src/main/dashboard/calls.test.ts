import { describe, expect, it } from 'vitest'
import { csvText } from './calls'

describe('csvText', () => {
  it('quotes per RFC 4180 only when needed', () => {
    expect(csvText('plain')).toBe('plain')
    expect(csvText('')).toBe('')
    expect(csvText('a,b')).toBe('"a,b"')
    expect(csvText('say "hi"')).toBe('"say ""hi"""')
    expect(csvText('two\nlines')).toBe('"two\nlines"')
    expect(csvText('cr\rhere')).toBe('"cr\rhere"')
  })

  it('defuses text a spreadsheet would run as a formula', () => {
    expect(csvText('=1+1')).toBe("'=1+1")
    expect(csvText('+1')).toBe("'+1")
    expect(csvText('-1')).toBe("'-1")
    expect(csvText('@SUM(A1)')).toBe("'@SUM(A1)")
    expect(csvText('\tx')).toBe('"\'\tx"')
    expect(csvText('=HYPERLINK("a","b")')).toBe('"\'=HYPERLINK(""a"",""b"")"')
    expect(csvText('a=b')).toBe('a=b')
  })

  it('quotes ; and tab (separators in other locales), and defuses a formula right after a separator', () => {
    expect(csvText('a;b')).toBe('"a;b"')
    expect(csvText(';=1+1')).toBe('";\'=1+1"')
    expect(csvText('x,@cmd')).toBe('"x,\'@cmd"')
  })
})
