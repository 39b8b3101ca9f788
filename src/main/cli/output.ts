import { styleText } from 'node:util'
import Table from 'cli-table3'
import { strlen } from 'cli-table3/src/utils.js'
import type { Writable } from './context'
import { formatUsdFull } from '../../shared/format'
import { csvText } from '../dashboard/calls'

type Style = Parameters<typeof styleText>[0]

/** Colour only for a terminal, and never with NO_COLOR (node's styleText checks both for the stream). */
export function paint(out: Writable, style: Style, text: string): string {
  if (!out.isTTY) return text
  return styleText(style, text, { stream: out as NodeJS.WriteStream })
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

const PLAIN = /^[\x20-\x7e]*$/
const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' })

/**
 * The columns `s` takes in a terminal, as the table itself measures a cell (cli-table3's strlen),
 * so the widths chosen here are the ones it pads to: an emoji or a CJK character two, a combining
 * accent none. (UTF-16 length counted an emoji two and a CJK character one.)
 */
function textWidth(s: string): number {
  return PLAIN.test(s) ? s.length : strlen(s)
}

/**
 * `s` in at most `width` columns: whole when it fits, else its first graphemes (characters as a
 * reader sees them: an emoji with its joiners and modifiers, a letter with its accents) and `…`.
 * Never cut inside one: half a surrogate pair prints as U+FFFD.
 */
function cut(s: string, width: number): string {
  if (textWidth(s) <= width) return s
  const room = Math.max(1, width - 1)
  let kept = ''
  let used = 0
  for (const { segment } of graphemes.segment(s)) {
    const w = textWidth(segment)
    if (used + w > room) break
    kept += segment
    used += w
  }
  return kept + '…'
}

/**
 * A table that fits the terminal (80 columns when not one): every column but the first has
 * its natural width; the first gets what is left and its cells are cut with `…` (between
 * graphemes). Widths are a terminal's columns, so emoji and CJK names keep the columns aligned.
 */
export function table(out: Writable, head: string[], rows: string[][], opts: { align?: ('left' | 'right')[]; footer?: string[] } = {}): string {
  const width = Math.min(out.isTTY && out.columns ? out.columns : 80, 200)
  const all = opts.footer ? [...rows, opts.footer] : rows
  // Widths in a terminal's columns, as the table pads to them.
  const natural = head.map((h, i) => {
    let w = textWidth(h)
    for (const r of all) w = Math.max(w, textWidth(r[i] ?? ''))
    return w + 2
  })
  const rest = natural.slice(1).reduce((a, b) => a + b, 0) + head.length + 1
  const first = Math.max(8, Math.min(natural[0], width - rest))
  const colWidths = [first, ...natural.slice(1)]
  const t = new Table({
    head: head.map((h) => paint(out, 'bold', h)),
    colWidths,
    colAligns: opts.align ?? head.map((_, i) => (i === 0 ? 'left' : 'right')),
    style: { head: [], border: [], 'padding-left': 1, 'padding-right': 1 },
    chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' },
    wordWrap: false,
  })
  for (const r of rows) t.push([cut(r[0], first - 2), ...r.slice(1)])
  if (opts.footer) t.push([paint(out, 'bold', cut(opts.footer[0], first - 2)), ...opts.footer.slice(1).map((c) => paint(out, 'bold', c))])
  return t.toString() + '\n'
}

/**
 * RFC 4180 CSV (CRLF line ends), text cells as the export writes them (csvText: quoted when
 * needed, and a formula a spreadsheet would run defused: a session, agent or project is whatever
 * a caller sent); numbers and booleans as they are.
 */
/**
 * A sum of stored costs as a CSV prints it: to 15 significant digits, what a double holds
 * exactly, so that $0.10 + $0.20 reads 0.3 and not 0.30000000000000004 (the addition's binary
 * residue, not money). The stored costs themselves are never rounded.
 */
export function csvSum(v: number): number {
  return Number.isInteger(v) ? v : Number(v.toPrecision(15))
}

export function csv(head: string[], rows: (string | number | boolean | null)[][]): string {
  const f = (v: string | number | boolean | null) => (v === null ? '' : typeof v === 'string' ? csvText(v) : String(v))
  return [head, ...rows].map((r) => r.map(f).join(',')).join('\r\n') + '\r\n'
}
