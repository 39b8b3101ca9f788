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
