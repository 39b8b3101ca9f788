import { describe, expect, it } from 'vitest'
import { CSV_HEADER, type CallRow, csvLine, csvText, toCall } from './calls'
import { EXPORT_COLUMNS, ExportFormatter } from './export-format'

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

describe('ExportFormatter', () => {
  const row = (over: Partial<CallRow>): CallRow => ({
    id: 1, ts: 1_763_900_000_123, provider: 'openai', model: 'gpt-4o', api_key_hash: 'ab'.repeat(32), tenant: 't', agent: 'codex',
    session: 's', status: 200, streamed: 1, input_tokens: 10, output_tokens: 5, cache_read_tokens: 0, cache_write_tokens: 0,
    reasoning_tokens: 0, cost_usd: 0.000123, priced: 1, estimated: 0, latency_ms: 12.5, response_id: '', source: 'proxy',
    billing: 'api', project: '', member: '', ...over,
  })
  const raw = (r: CallRow) => EXPORT_COLUMNS.map((c) => r[c as keyof CallRow])

  it('writes exactly what csvLine and JSON.stringify(toCall) write, for any time, number and text, including repeated ones, in pages of any size', () => {
    const texts = ['', 'plain', 'a,b', '=1+1', 'say "hi"', 'two\nlines', ';=x', 'ünïcode ✓', '-', '@x', '\t', 'back\\slash', 'ctl\u0001', '\u2028']
    const times = [0, 1, 999, 1000, 59_999, 60_000, 3_599_999, 3_600_000, 1_763_900_000_123, 1_763_903_599_999, 253_402_300_799_999, 253_402_300_800_000, -1, 1.5]
    const numbers = [0.1 + 0.2, 1 / 3, 1e-7, 1e21, -0, 5e-324, Infinity, -Infinity, NaN]
    const rows: CallRow[] = []
    let id = 0
    for (let round = 0; round < 2; round++) {
      for (const ts of times) {
        for (const t of texts) {
          id++
          rows.push(row({
            id, ts, provider: t, model: t + 'm', api_key_hash: t, tenant: t, agent: t, session: t, project: t, member: t,
            response_id: t, source: t as CallRow['source'], billing: t as CallRow['billing'], cost_usd: numbers[id % numbers.length],
            streamed: id % 3, priced: id % 2, estimated: (id + 1) % 2, latency_ms: id / 3, status: id % 7 === 0 ? 1.5 : 200,
          }))
        }
      }
    }
    for (const size of [1, 7, 500]) {
      const csv = new ExportFormatter('csv')
      const json = new ExportFormatter('json')
      let gotCsv = csv.head()
      let gotJson = json.head()
      for (let i = 0; i < rows.length; i += size) {
        const page = rows.slice(i, i + size).map(raw)
        gotCsv += csv.page(page)
        gotJson += json.page(page)
      }
      expect(gotCsv + csv.tail()).toBe(CSV_HEADER + rows.map(csvLine).join(''))
      expect(gotJson + json.tail()).toBe('{"calls":[' + rows.map((r) => JSON.stringify(toCall(r))).join(',') + ']}')
    }
  })

  it('writes the same once its memory of texts has filled and been cleared', () => {
    const csv = new ExportFormatter('csv')
    for (let i = 0; i < 120_000; i += 1000) {
      const rs = Array.from({ length: 1000 }, (_, j) => row({ id: i + j, agent: `a-${i + j}`, ts: 1_763_900_000_000 + (i + j) * 7919 }))
      expect(csv.page(rs.map(raw))).toBe(rs.map(csvLine).join(''))
    }
  })

  it('continues an export another formatter began: the first JSON row gets its comma', () => {
    expect(new ExportFormatter('json', true).page([raw(row({}))])).toBe(',' + JSON.stringify(toCall(row({}))))
    expect(new ExportFormatter('json').page([])).toBe('')
  })
})
