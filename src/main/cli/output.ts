import { styleText } from 'node:util'
import type { Writable } from './context'
import { formatUsdFull } from '../../shared/format'
import { csvText } from '../dashboard/calls'

type Style = Parameters<typeof styleText>[0]

/** Colour only for a terminal, and never with NO_COLOR (node's styleText checks both for the stream). */
export function paint(out: Writable, style: Style, text: string): string {
  if (!out.isTTY) return text
  return styleText(style, text, { stream: out as NodeJS.WriteStream })
}

// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const CONTROLS = /[\x00-\x1f\x7f-\x9f]/g

/**
 * `s` with every control character (C0, DEL, C1) shown as its code, `\x1B`, for text a terminal
 * prints: an agent, session, project, tenant, model or key hint is whatever a caller sent (a
 * header's Latin-1 byte 0x9B is CSI, a body's string may hold ESC, BEL, CR), and printed as it is
 * it would move the cursor, clear lines, recolour figures or write the clipboard. Its code, not
 * U+FFFD, so two names that differ only there still read differently; four columns of ASCII, so a
 * table measures it as it prints. (--json and --csv are data and keep names as they are.)
 */
export function visible(s: string): string {
  return s.replace(CONTROLS, (c) => `\\x${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`)
}

/** `$0.00004`, `$0.0042`, `$12.34`, `$1,234.56`: the shared formatting (src/shared/format.ts). */
export function usd(n: number): string {
  return formatUsdFull(n)
}

const UNITS = [[1e3, 'k'], [1e6, 'M'], [1e9, 'B']] as const

/** 1234 -> 1.2k, 5_600_000 -> 5.6M: token counts that fit a narrow column. */
export function compact(n: number): string {
  if (n < 1000) return String(n)
  // The unit is chosen by the rounded figure, so 999,950 reads 1.0M (not 1000k) and 99,950 reads 100k (not 100.0k).
  for (let i = 0; i < UNITS.length; i++) {
    const [v, s] = UNITS[i]
    const text = oneOrNoDecimal(n / v)
    if (Number(text) < 1000 || i === UNITS.length - 1) return `${text}${s}`
  }
  return String(n)
}

/** 1.2, 99.9, 100, 999: one decimal below 100 once rounded, none from 100 on. */
function oneOrNoDecimal(x: number): string {
  const one = x.toFixed(1)
  return Number(one) >= 100 ? x.toFixed(0) : one
}

/**
 * A sum of stored costs as a CSV prints it: to 15 significant digits, what a double holds
 * exactly, so that $0.10 + $0.20 reads 0.3 and not 0.30000000000000004 (the addition's binary
 * residue, not money). The stored costs themselves are never rounded.
 */
export function csvSum(v: number): number {
  return Number.isInteger(v) ? v : Number(v.toPrecision(15))
}

type CsvCell = string | number | boolean | null

/** Lines of a CSV or JSON yielded together: a chunk of output, never the whole of a big one. */
const CHUNK_ROWS = 1000

/**
 * RFC 4180 CSV (CRLF line ends), text cells as the export writes them (csvText: quoted when
 * needed, and a formula a spreadsheet would run defused: a session, agent or project is whatever
 * a caller sent); numbers and booleans as they are. `rows` are made into lines as they are
 * yielded, a chunk of them at a time.
 */
export function* csvChunks<R>(head: string[], rows: readonly R[], cells: (r: R) => CsvCell[]): Generator<string> {
  const f = (v: CsvCell) => (v === null ? '' : typeof v === 'string' ? csvText(v) : String(v))
  let chunk = head.map(f).join(',') + '\r\n'
  for (let i = 0; i < rows.length; i++) {
    chunk += cells(rows[i]).map(f).join(',') + '\r\n'
    if ((i + 1) % CHUNK_ROWS === 0) {
      yield chunk
      chunk = ''
    }
  }
  if (chunk) yield chunk
}

/**
 * `JSON.stringify(value, null, 2) + '\n'`, the same bytes, yielded a chunk at a time: the array
 * under `key` a thousand elements at a time (a report of 1,000,000 rows, indented, is near the
 * longest string JavaScript can hold), the rest of `value` as it is.
 */
export function* jsonChunks(value: Record<string, unknown>, key: string): Generator<string> {
  const list = value[key]
  if (!Array.isArray(list) || list.length === 0) {
    yield JSON.stringify(value, null, 2) + '\n'
    return
  }
  // The rest, with an empty list in its place, cut there: a raw line break starts a line of the
  // JSON (in a string it is escaped) and only a top-level key is two spaces in, so that is the place.
  const marker = `\n  ${JSON.stringify(key)}: []`
  const whole = JSON.stringify({ ...value, [key]: [] }, null, 2)
  const at = whole.indexOf(marker)
  yield whole.slice(0, at) + `\n  ${JSON.stringify(key)}: [`
  let chunk = ''
  for (let i = 0; i < list.length; i += CHUNK_ROWS) {
    // A chunk of the list as JSON.stringify indents it, `[\n  a,\n  b\n]`, two spaces further in.
    const part = JSON.stringify(list.slice(i, i + CHUNK_ROWS), null, 2)
    chunk = (i ? ',' : '') + '\n    ' + part.slice(4, -2).replaceAll('\n', '\n  ')
    if (i + CHUNK_ROWS < list.length) yield chunk
  }
  yield chunk + '\n  ]' + whole.slice(at + marker.length) + '\n'
}
