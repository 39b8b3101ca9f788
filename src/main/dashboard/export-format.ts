import { CALL_FIELDS } from '../../shared/api'
import { CSV_HEADER, IsoTimes, csvSpecialAscii, csvText } from './calls'
import { ByteWriter, utf8 } from './export-bytes'

/**
 * The export's text, built fast and byte for byte what `csvLine(r)` and `JSON.stringify(toCall(r))`
 * give (./calls.test.ts holds it to them). Rows are arrays in the order of `EXPORT_COLUMNS`
 * (better-sqlite3's `.raw(true)`: no object per row). On SQLite the texts that repeat on every
 * row (providers, models, keys, tenants, agents, sources, billing, projects, members) come joined
 * (JOINED_SQL), and a page of rows is written straight into one buffer as UTF-8 bytes
 * (./export-bytes.ts): each distinct join's cells (CSV) or keys and values (JSON) are made once
 * and kept as bytes, times are formatted once per hour, numbers are written digit by digit, and
 * no string of the page is added up and then encoded again. Rows read plainly (PostgreSQL, or a
 * page whose join failed) become one string: CSV added up from remembered cells, JSON one
 * `JSON.stringify` of the page's calls.
 */

/** The columns of `calls` a row of the export is read from, in `CALL_FIELDS` order (`ts` for `t`). */
export const EXPORT_COLUMNS = CALL_FIELDS.map((f) => (f === 't' ? 'ts' : f))
export const EXPORT_COLUMNS_SQL = EXPORT_COLUMNS.join(', ')

const JOIN = ' || char(31) || '
/**
 * SQLite: the same columns, with the texts that repeat on every row joined in SQL by U+001F
 * into two values (provider to agent, source to member): two strings a row to make and look up
 * instead of nine. A text holding U+001F itself shows as a join of the wrong length, and its page
 * is read again plainly.
 */
export const JOINED_SQL = [
  'id', 'ts', ['provider', 'model', 'api_key_hash', 'tenant', 'agent'].join(JOIN), 'session', 'status', 'streamed',
  'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'reasoning_tokens', 'cost_usd', 'priced',
  'estimated', 'latency_ms', 'response_id', ['source', 'billing', 'project', 'member'].join(JOIN),
].join(', ')

/** Where `id` and `ts` are in a row, plain or joined (the keyset a page continues after). */
export const ID = 0
export const TS = 1

/** A row as read: the values of `EXPORT_COLUMNS`, in order. */
export type ExportRow = unknown[]

export type ExportFormat = 'csv' | 'json'

/** A string function's answers, remembered; forgotten all at once past `max` (a ledger's texts mostly repeat). */
function memo<T>(fn: (s: string) => T, max: number): (s: string) => T {
  let seen = new Map<string, T>()
  return (s) => {
    let v = seen.get(s)
    if (v === undefined) {
      if (seen.size >= max) seen = new Map()
      v = fn(s)
      seen.set(s, v)
    }
    return v
  }
}

/** A flag column as the export writes it: true only for 1. */
const flag = (v: unknown): string => (v === 1 ? 'true' : 'false')

/**
 * Bytes of texts joined by U+001F, each as `cell` writes it, with `names[i]` before part i and `last`
 * after them all; null when the join does not have `names.length` parts (or is not a text). Remembered; forgotten
 * all at once past `max`.
 */
function joinedBytes(names: readonly string[], cell: (s: string) => string, last: string, max: number): (s: string) => Uint8Array | null {
  const bytesOf = memo((s): Uint8Array | null => {
    const parts = s.split('\x1f')
    return parts.length === names.length ? utf8(parts.map((p, i) => names[i] + cell(p)).join('') + last) : null
  }, max)
  // Not a text: a NULL in one of the joined columns (the page is read plainly).
  return (s) => (typeof s === 'string' ? bytesOf(s) : null)
}

/** ASCII characters that make a CSV cell need csvText's care anywhere (quoting) and first (a formula's defusing too), from csvText's own rule. */
const { anywhere: CSV_SPECIAL, first: CSV_SPECIAL_FIRST } = csvSpecialAscii()

/** JSON: each field's key as JSON.stringify writes it (`"name":`), and the constant runs between a call's values. */
const J_KEY = Object.fromEntries(CALL_FIELDS.map((f) => [f, JSON.stringify(f) + ':'])) as Record<(typeof CALL_FIELDS)[number], string>
const J_ID = utf8('{' + J_KEY.id)
const J_T = utf8(',' + J_KEY.t + '"')
const J_STATUS = utf8(',' + J_KEY.status)
const J_STREAMED_TRUE = utf8(',' + J_KEY.streamed + 'true,' + J_KEY.input_tokens)
const J_STREAMED_FALSE = utf8(',' + J_KEY.streamed + 'false,' + J_KEY.input_tokens)
const J_OUTPUT = utf8(',' + J_KEY.output_tokens)
const J_CACHE_READ = utf8(',' + J_KEY.cache_read_tokens)
const J_CACHE_WRITE = utf8(',' + J_KEY.cache_write_tokens)
const J_REASONING = utf8(',' + J_KEY.reasoning_tokens)
const J_COST = utf8(',' + J_KEY.cost_usd)
/** priced and estimated, by `priced * 2 + estimated`, then latency_ms's key. */
const J_FLAGS = [false, true].flatMap((priced) =>
  [false, true].map((estimated) => utf8(`,${J_KEY.priced}${priced},${J_KEY.estimated}${estimated},${J_KEY.latency_ms}`)),
)
const J_RESPONSE_ID = utf8(',' + J_KEY.response_id)

/** JSON.stringify of a text (a column's value of any other type likewise). */
const jsonText = (s: string): string => String(JSON.stringify(s))

const TRUE_COMMA = utf8('true,')
const FALSE_COMMA = utf8('false,')

/** `IsoTimes` as bytes: the date and hour (`2026-11-24T04:`) kept as bytes for the hour. */
class IsoBytes {
  private hour = NaN
  private prefix: Uint8Array = new Uint8Array(0)
  private readonly iso = new IsoTimes()

  /** `new Date(ts).toISOString()`. */
  write(w: ByteWriter, ts: number): void {
    if (!Number.isInteger(ts) || ts < 0 || ts >= 253_402_300_800_000) return w.ascii(this.iso.of(ts))
    w.room(24)
    const h = Math.floor(ts / 3_600_000)
    if (h !== this.hour) {
      this.hour = h
      this.prefix = utf8(new Date(h * 3_600_000).toISOString().slice(0, 14))
    }
    w.put(this.prefix)
    const r = ts - h * 3_600_000
    const m = Math.floor(r / 60_000)
    const rs = r - m * 60_000
    const sec = Math.floor(rs / 1000)
    const ms = rs - sec * 1000
    const buf = w.buf
    const p = w.pos
    buf[p] = 48 + Math.floor(m / 10)
    buf[p + 1] = 48 + (m % 10)
    buf[p + 2] = 58
    buf[p + 3] = 48 + Math.floor(sec / 10)
    buf[p + 4] = 48 + (sec % 10)
    buf[p + 5] = 46
    buf[p + 6] = 48 + Math.floor(ms / 100)
    buf[p + 7] = 48 + (Math.floor(ms / 10) % 10)
    buf[p + 8] = 48 + (ms % 10)
    buf[p + 9] = 90
    w.pos = p + 10
  }
}

/** Builds the export's text a page at a time; one formatter per export (it remembers what it has seen). */
export class ExportFormatter {
  private readonly iso = new IsoTimes()
  /** Texts that repeat (few distinct values): escaped once, with the separator that follows them. */
  private readonly csvCell = memo((s) => csvText(s) + ',', 50_000)
  private readonly isoBytes = new IsoBytes()
  private readonly headBytes = joinedBytes(['', '', '', '', ''], (p) => csvText(p) + ',', '', 50_000)
  private readonly tailBytes = joinedBytes(['', ',', ',', ','], csvText, '\r\n', 50_000)
  /** JSON: `",` after the time, provider to agent, then `"session":`; and source to member, then the call's end. */
  private readonly jsonHead = joinedBytes(
    ['",' + J_KEY.provider, ',' + J_KEY.model, ',' + J_KEY.api_key_hash, ',' + J_KEY.tenant, ',' + J_KEY.agent], jsonText, ',' + J_KEY.session, 50_000,
  )
  private readonly jsonTail = joinedBytes([',' + J_KEY.source, ',' + J_KEY.billing, ',' + J_KEY.project, ',' + J_KEY.member], jsonText, '}', 50_000)
  /** Bytes per row of the last page written as bytes (the next page's first guess). */
  private rowBytes = 320
  private first: boolean

  /** `continued`: rows were written before (by another formatter), so the first row here is not the first of the export. */
  constructor(
    readonly format: ExportFormat,
    continued = false,
  ) {
    this.first = !continued
  }

  /** What comes before the first row. */
  head(): string {
    return this.format === 'csv' ? CSV_HEADER : '{"calls":['
  }

  /** What comes after the last row (the HTTP export's; the CLI adds its own line break). */
  tail(): string {
    return this.format === 'csv' ? '' : ']}'
  }

  /** The rows, in order, as one string. */
  page(rows: readonly ExportRow[]): string {
    return this.format === 'csv' ? this.csv(rows) : this.json(rows)
  }

  private csv(rows: readonly ExportRow[]): string {
    const c = this.csvCell
    const iso = this.iso
    let out = ''
    for (const r of rows) {
      // session and response_id are (nearly) one per call: escaped directly, not remembered.
      out +=
        r[0] + ',' + iso.of(r[1] as number) + ',' + c(r[2] as string) + c(r[3] as string) + c(r[4] as string) +
        c(r[5] as string) + c(r[6] as string) + csvText(r[7] as string) + ',' + r[8] + ',' + flag(r[9]) + ',' +
        r[10] + ',' + r[11] + ',' + r[12] + ',' + r[13] + ',' + r[14] + ',' + r[15] + ',' + flag(r[16]) + ',' +
        flag(r[17]) + ',' + r[18] + ',' + csvText(r[19] as string) + ',' + c(r[20] as string) + c(r[21] as string) +
        c(r[22] as string) + csvText(r[23] as string) + '\r\n'
    }
    return out
  }

  /**
   * CSV of rows read with `JOINED_SQL`, as UTF-8 bytes written straight into one buffer of its
   * own (no string made and encoded again): the same bytes as `Buffer.from(page(plain rows))`,
   * or null when a joined text had the wrong number of parts (a text holding U+001F: read it plainly).
   */
  csvJoinedBytes(rows: readonly ExportRow[]): Buffer | null {
    const iso = this.isoBytes
    const n = rows.length
    const w = new ByteWriter(Math.ceil(n * this.rowBytes * 1.1) + 1024)
    for (let i = 0; i < n; i++) {
      const r = rows[i]
      const head = this.headBytes(r[2] as string)
      const tail = this.tailBytes(r[16] as string)
      if (head === null || tail === null) return null
      w.num(r[0] as number)
      w.byte(44)
      iso.write(w, r[1] as number)
      w.byte(44)
      w.put(head)
      csvCell(w, r[3] as string)
      w.byte(44)
      w.num(r[4] as number)
      w.byte(44)
      w.put(r[5] === 1 ? TRUE_COMMA : FALSE_COMMA)
      w.num(r[6] as number)
      w.byte(44)
      w.num(r[7] as number)
      w.byte(44)
      w.num(r[8] as number)
      w.byte(44)
      w.num(r[9] as number)
      w.byte(44)
      w.num(r[10] as number)
      w.byte(44)
      w.num(r[11] as number)
      w.byte(44)
      w.put(r[12] === 1 ? TRUE_COMMA : FALSE_COMMA)
      w.put(r[13] === 1 ? TRUE_COMMA : FALSE_COMMA)
      w.num(r[14] as number)
      w.byte(44)
      csvCell(w, r[15] as string)
      w.byte(44)
      w.put(tail)
    }
    if (n > 0) this.rowBytes = Math.max(64, Math.ceil(w.pos / n))
    return w.bytes()
  }

  /**
   * JSON of rows read with `JOINED_SQL`, as UTF-8 bytes written straight into one buffer of
   * its own: the same bytes as `Buffer.from(page(plain rows))`, or null (writing nothing) when a
   * joined text had the wrong number of parts (read it plainly).
   */
  jsonJoinedBytes(rows: readonly ExportRow[]): Buffer | null {
    const iso = this.isoBytes
    const n = rows.length
    const w = new ByteWriter(Math.ceil(n * this.rowBytes * 1.1) + 1024)
    let comma = !this.first
    for (let i = 0; i < n; i++) {
      const r = rows[i]
      const head = this.jsonHead(r[2] as string)
      const tail = this.jsonTail(r[16] as string)
      if (head === null || tail === null) return null
      if (comma) w.byte(44)
      comma = true
      w.put(J_ID)
      w.num(r[0] as number)
      w.put(J_T)
      iso.write(w, r[1] as number)
      w.put(head)
      jsonValue(w, r[3])
      w.put(J_STATUS)
      jsonNumber(w, r[4])
      w.put(r[5] === 1 ? J_STREAMED_TRUE : J_STREAMED_FALSE)
      jsonNumber(w, r[6])
      w.put(J_OUTPUT)
      jsonNumber(w, r[7])
      w.put(J_CACHE_READ)
      jsonNumber(w, r[8])
      w.put(J_CACHE_WRITE)
      jsonNumber(w, r[9])
      w.put(J_REASONING)
      jsonNumber(w, r[10])
      w.put(J_COST)
      jsonNumber(w, r[11])
      w.put(J_FLAGS[(r[12] === 1 ? 2 : 0) + (r[13] === 1 ? 1 : 0)])
      jsonNumber(w, r[14])
      w.put(J_RESPONSE_ID)
      jsonValue(w, r[15])
      w.put(tail)
    }
    if (n > 0) {
      this.first = false
      this.rowBytes = Math.max(64, Math.ceil(w.pos / n))
    }
    return w.bytes()
  }

  private json(rows: readonly ExportRow[]): string {
    if (rows.length === 0) return ''
    const iso = this.iso
    const calls = new Array<object>(rows.length)
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]
      // toCall's fields in its order: JSON.stringify of objects of one shape writes them fastest.
      calls[i] = {
        id: r[0], t: iso.of(r[1] as number), provider: r[2], model: r[3], api_key_hash: r[4], tenant: r[5],
        agent: r[6], session: r[7], status: r[8], streamed: r[9] === 1, input_tokens: r[10], output_tokens: r[11],
        cache_read_tokens: r[12], cache_write_tokens: r[13], reasoning_tokens: r[14], cost_usd: r[15],
        priced: r[16] === 1, estimated: r[17] === 1, latency_ms: r[18], response_id: r[19], source: r[20],
        billing: r[21], project: r[22], member: r[23],
      }
    }
    // One array for the page, without its brackets: the calls joined by commas, as one flat string.
    const text = JSON.stringify(calls)
    const out = (this.first ? '' : ',') + text.slice(1, -1)
    this.first = false
    return out
  }

}

/**
 * `csvText(s)` as bytes (as the text adds it up: any other value as its text): a text of ASCII
 * characters none of which needs care is copied byte by byte, any other through csvText and the
 * UTF-8 encoder (csvText's cell is at most twice the text and three more, in UTF-16 units).
 */
function csvCell(w: ByteWriter, s: string): void {
  if (typeof s !== 'string') return w.text('' + csvText(s))
  const n = s.length
  if (n === 0) return
  w.room(n)
  const buf = w.buf
  const p = w.pos
  let c = s.charCodeAt(0)
  if (c < 128 && CSV_SPECIAL_FIRST[c] === 0) {
    buf[p] = c
    let i = 1
    for (; i < n; i++) {
      c = s.charCodeAt(i)
      if (c >= 128 || CSV_SPECIAL[c] === 1) break
      buf[p + i] = c
    }
    if (i === n) {
      w.pos = p + n
      return
    }
  }
  w.text(csvText(s))
}

/**
 * `JSON.stringify(v)` as bytes: a text of ASCII characters none of which JSON escapes (a quote, a
 * backslash, a control character) is copied byte by byte between quotes, any other value through
 * JSON.stringify and the UTF-8 encoder (JSON.stringify writes a lone surrogate as an escape).
 */
function jsonValue(w: ByteWriter, s: unknown): void {
  if (typeof s !== 'string') return w.text(String(JSON.stringify(s)))
  const n = s.length
  w.room(n + 2)
  const buf = w.buf
  const p = w.pos
  buf[p] = 34
  let i = 0
  for (; i < n; i++) {
    const c = s.charCodeAt(i)
    if (c < 32 || c >= 128 || c === 34 || c === 92) break
    buf[p + 1 + i] = c
  }
  if (i === n) {
    buf[p + 1 + n] = 34
    w.pos = p + n + 2
    return
  }
  w.text(JSON.stringify(s))
}

/** `JSON.stringify(v)` of a number column's value: a finite number as String(n) writes it, anything else through JSON.stringify. */
function jsonNumber(w: ByteWriter, v: unknown): void {
  if (typeof v === 'number' && Number.isFinite(v)) w.num(v)
  else w.text(String(JSON.stringify(v)))
}
