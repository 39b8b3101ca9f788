import { describe, expect, it } from 'vitest'
import { type CallRow, CsvFormatter, csvLine, csvText } from './calls'

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

describe('CsvFormatter', () => {
  const row = (over: Partial<CallRow>): CallRow => ({
    id: 1, ts: 1_763_900_000_123, provider: 'openai', model: 'gpt-4o', api_key_hash: 'ab'.repeat(32), tenant: 't', agent: 'codex',
    session: 's', status: 200, streamed: 1, input_tokens: 10, output_tokens: 5, cache_read_tokens: 0, cache_write_tokens: 0,
    reasoning_tokens: 0, cost_usd: 0.000123, priced: 1, estimated: 0, latency_ms: 12.5, response_id: '', source: 'proxy',
    billing: 'api', project: '', member: '', ...over,
  })

  it('writes exactly what csvLine writes, for any time and any text, including repeated ones', () => {
    const f = new CsvFormatter()
    const texts = ['', 'plain', 'a,b', '=1+1', 'say "hi"', 'two\nlines', ';=x', 'ünïcode ✓', '-', '@x', '\t']
    const times = [0, 1, 999, 1000, 59_999, 60_000, 3_599_999, 3_600_000, 1_763_900_000_123, 1_763_903_599_999, 253_402_300_799_999, 253_402_300_800_000, -1, 1.5]
    let id = 0
    for (let round = 0; round < 2; round++) {
      for (const ts of times) {
        for (const t of texts) {
          const r = row({ id: ++id, ts, provider: t, model: t + 'm', tenant: t, session: t, project: t, member: t, cost_usd: id * 0.1, streamed: id % 2, latency_ms: id / 3 })
          expect(f.csv(r)).toBe(csvLine(r))
        }
      }
    }
  })

  it('writes the same once its memory of texts has filled and been cleared', () => {
    const f = new CsvFormatter()
    for (let i = 0; i < 50_000; i++) {
      const r = row({ id: i, session: `s-${i}`, ts: 1_763_900_000_000 + i * 7919 })
      expect(f.csv(r)).toBe(csvLine(r))
    }
  })
})
