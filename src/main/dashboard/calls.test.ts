import { describe, expect, it } from 'vitest'
import { CSV_HEADER, type CallRow, csvLine, csvText, toCall } from './calls'
import { ByteWriter } from './export-bytes'
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

  /** A row as JOINED_SQL reads it: provider to agent, and source to member, joined by U+001F. */
  const joined = (r: CallRow) => [
    r.id, r.ts, [r.provider, r.model, r.api_key_hash, r.tenant, r.agent].join('\x1f'), r.session, r.status, r.streamed,
    r.input_tokens, r.output_tokens, r.cache_read_tokens, r.cache_write_tokens, r.reasoning_tokens, r.cost_usd, r.priced,
    r.estimated, r.latency_ms, r.response_id, [r.source, r.billing, r.project, r.member].join('\x1f'),
  ]
  /** Texts of every kind a cell can hold: needing quotes or a formula's defusing, non-ASCII of 2, 3 and 4 bytes, lone surrogates, controls. */
  const TEXTS = [
    '', 'plain', 'a,b', '=1+1', 'say "hi"', 'two\nlines', ';=x', 'x,@cmd', 'ünïcode ✓', 'é', '日本語', '😀 emoji', 'a😀,b',
    '\ud800', 'x\udc00y', '\udc00\ud800', '-', '@x', '\t', 'tab\tin', 'cr\r', 'back\\slash', 'ctl\u0001', '\u007f', '\u0080',
    '\u2028', '"', '""', "'", 'chatcmpl-aDtzkkzovSvGfOh5yF7di3YZcIwoR', 'msg_01XFDUDYJgAACzvnptvVoYEL', '€=', 'ü,"ü"', 'x'.repeat(5000),
  ]
  const NUMBERS = [
    0, -0, 1, -1, 7, 42, 2 ** 31 - 1, 2 ** 31, -(2 ** 31), 2 ** 32 + 5, 2 ** 53 - 1, 2 ** 53, 2 ** 53 + 2, -(2 ** 53) - 2, 2 ** 64, 1e20, 1e21, 1.5e300,
    Number.MAX_VALUE, 5e-324, -5e-324, 1e-6, 1e-7, 9.99e-7, 0.1 + 0.2, 1 / 3, -2 / 3, 0.009848125, 0.000123, 290.56, 12.5, 1.005, 2.675,
    0.1, 99999999999999.9, 1e14 - 0.5, 123456789.123456, Infinity, -Infinity, NaN,
  ]

  /** Rows with every kind of text, time and number (and whatever else a column may hold). */
  function everyKind(): CallRow[] {
    const times = [0, 1, 999, 59_999, 3_599_999, 3_600_000, 1_763_900_000_123, 1_763_903_599_999, 253_402_300_799_999, 253_402_300_800_000, -1, 1.5]
    const rows: CallRow[] = []
    let id = 0
    for (const ts of times) {
      for (const t of TEXTS) {
        id++
        const n = (k: number) => NUMBERS[(id * 7 + k) % NUMBERS.length]
        rows.push(row({
          id, ts, provider: t, model: t + 'm', api_key_hash: t, tenant: t, agent: 'a' + t, session: t, project: t, member: t,
          response_id: t, source: t as CallRow['source'], billing: t as CallRow['billing'], cost_usd: n(0), latency_ms: n(1),
          status: n(2), input_tokens: n(3), output_tokens: n(4), cache_read_tokens: n(5), cache_write_tokens: n(6), reasoning_tokens: n(7),
          streamed: id % 3, priced: id % 2, estimated: (id + 1) % 2,
        }))
      }
    }
    return rows
  }

  it('writes CSV as bytes: exactly the UTF-8 of csvLine, for every kind of text, time and number, in pages of any size', () => {
    const rows = everyKind()
    // Values of other types than their columns' (SQLite keeps what it is given): as adding them to a text writes them.
    rows.push(row({ id: 1e6, session: 7 as unknown as string, response_id: null as unknown as string, status: '200' as unknown as number, cost_usd: -1 }))
    rows.push(row({ id: 1e6 + 1, session: -7 as unknown as string, input_tokens: null as unknown as number }))
    for (const size of [1, 7, 500]) {
      const csv = new ExportFormatter('csv')
      const pages: Buffer[] = []
      for (let i = 0; i < rows.length; i += size) pages.push(csv.csvJoinedBytes(rows.slice(i, i + size).map(joined))!)
      expect(Buffer.concat(pages).equals(Buffer.from(rows.map(csvLine).join(''), 'utf8'))).toBe(true)
    }
  })

  it('writes JSON as bytes: exactly the UTF-8 of JSON.stringify(toCall), for every kind of text, time and number, in pages of any size', () => {
    const rows = everyKind()
    // Values of other types than their columns' (SQLite keeps what it is given): as JSON.stringify writes them.
    rows.push(row({ id: 1e6, session: 7 as unknown as string, response_id: null as unknown as string, status: '200' as unknown as number }))
    const want = Buffer.from('{"calls":[' + rows.map((r) => JSON.stringify(toCall(r))).join(',') + ']}', 'utf8')
    for (const size of [1, 7, 500]) {
      const json = new ExportFormatter('json')
      const pages: Buffer[] = [Buffer.from(json.head())]
      for (let i = 0; i < rows.length; i += size) pages.push(json.jsonJoinedBytes(rows.slice(i, i + size).map(joined))!)
      pages.push(Buffer.from(json.tail()))
      expect(Buffer.concat(pages).equals(want)).toBe(true)
    }
    // Bytes and text take turns (a page read again plainly): the commas between calls stay right.
    const json = new ExportFormatter('json')
    let got = json.head() + json.jsonJoinedBytes([])!.toString() + json.page([]) + json.jsonJoinedBytes([joined(rows[0])])!.toString()
    got += json.page([raw(rows[1])]) + json.jsonJoinedBytes([joined(rows[2]), joined(rows[3])])!.toString() + json.tail()
    expect(got).toBe('{"calls":[' + rows.slice(0, 4).map((r) => JSON.stringify(toCall(r))).join(',') + ']}')
    expect(new ExportFormatter('json', true).jsonJoinedBytes([joined(rows[0])])!.toString()).toBe(',' + JSON.stringify(toCall(rows[0])))
  })

  it('writes bytes: null for a page with a text holding U+001F (read again plainly), as the text does', () => {
    const csv = new ExportFormatter('csv')
    const json = new ExportFormatter('json')
    for (const over of [{ model: 'a\x1fb' }, { member: '\x1f' }, { agent: 'x\x1f' }]) {
      expect(csv.csvJoinedBytes([joined(row({})), joined(row(over))])).toBeNull()
      expect(json.jsonJoinedBytes([joined(row({})), joined(row(over))])).toBeNull()
    }
    // A NULL in a joined column makes the whole join NULL in SQL: that page too is read plainly.
    const nullHead = joined(row({}))
    nullHead[2] = null as unknown as string
    const nullTail = joined(row({}))
    nullTail[16] = null as unknown as string
    for (const r of [nullHead, nullTail]) {
      expect(csv.csvJoinedBytes([r])).toBeNull()
      expect(json.jsonJoinedBytes([r])).toBeNull()
    }
    // In the texts read one by one (session, response id) it is only a character.
    const r = row({ session: 'a\x1fb', response_id: '\x1f' })
    expect(csv.csvJoinedBytes([joined(r)])!.toString('utf8')).toBe(csvLine(r))
    // The first call after a page that was read again has no comma before it.
    expect(json.jsonJoinedBytes([joined(r)])!.toString('utf8')).toBe(JSON.stringify(toCall(r)))
  })

  it('writes numbers as String(n) writes them, including decimals of many digits and every whole number', () => {
    const w = new ByteWriter(16)
    const check = (x: number) => {
      w.pos = 0
      w.num(x)
      expect(w.bytes().toString('latin1')).toBe(String(x))
    }
    for (const x of NUMBERS) {
      check(x)
      check(-x)
    }
    // A seeded stream of costs and latencies of every kind: decimals of a few to 17 digits, tiny and huge, whole.
    let seed = 12345
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648
    for (let i = 0; i < 200_000; i++) {
      const kind = i % 6
      const x =
        kind === 0 ? Math.round(Math.exp(rand() * 12) * 100) / 100
        : kind === 1 ? Math.floor(rand() * 1e6) * (rand() * 1e-5)
        : kind === 2 ? rand() * 10 ** (Math.floor(rand() * 30) - 12)
        : kind === 3 ? Math.round(rand() * 10 ** Math.floor(rand() * 16)) / 10 ** Math.floor(rand() * 16)
        : kind === 4 ? (Math.floor(rand() * 100_000) * 0.15 + Math.floor(rand() * 1000) * 0.6) / 1e6
        : Math.floor(rand() * 2 ** 40) / 2 ** Math.floor(rand() * 40)
      check(x)
      check(-x)
    }
    // Whatever else a column may hold, as adding it to a text writes it.
    w.pos = 0
    w.num('12' as unknown as number)
    w.num(null as unknown as number)
    expect(w.bytes().toString()).toBe('12null')
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
