/**
 * Figures for people, shared by the dashboard (src/renderer), the tray (src/main/desktop-logic)
 * and the CLI (src/main/cli), so that one amount or share reads the same everywhere. Display
 * only: the API keeps every digit. Nothing here may import Node or DOM APIs.
 */

// Built on first use, not at import: the headless server imports this module at start-up (alert
// payloads), and a currency formatter brings ICU's locale and currency data into memory (about
// 4 MiB of the Node binary's pages) that a server which never formats an amount does not need.
let usdCents: Intl.NumberFormat | undefined
let usdSmall: Intl.NumberFormat | undefined
let int: Intl.NumberFormat | undefined

/**
 * Dollars in full, for a table or a line of text: `$0.00`, amounts under a cent
 * to two significant digits (`$0.00004`, `$0.0042`), cents from one cent on, thousands grouped
 * (`$1,234,567.89`). A real spend never reads as zero, and the sign stays in front (`-$0.0050`).
 */
export function formatUsdFull(v: number): string {
  if (!Number.isFinite(v)) return '—'
  if (v === 0) return '$0.00'
  // Under a cent once rounded to two significant digits ($0.00999 is $0.01, not $0.010).
  if (Math.abs(v) < 0.01 && Math.abs(Number(v.toPrecision(2))) < 0.01) return (usdSmall ??= new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', maximumSignificantDigits: 2 })).format(v)
  return (usdCents ??= new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 2 })).format(v)
}

/**
 * A spend and its limit for a budget (bars, alerts, forecast): dollars in full, thousands grouped
 * (`$9,960.00` / `$10,000.00`, never the compact `$10k` / `$10k`), with more decimals where two
 * different amounts would otherwise read the same (`$9,999.996` / `$10,000.00`).
 */
export function formatUsdPair(a: number, b: number): [string, string] {
  let pair: [string, string] = [formatUsdFull(a), formatUsdFull(b)]
  if (a === b || pair[0] !== pair[1] || !Number.isFinite(a) || !Number.isFinite(b)) return pair
  for (let digits = 3; digits <= 12 && pair[0] === pair[1]; digits++) {
    const f = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: digits })
    pair = [f.format(a), f.format(b)]
  }
  return pair
}

/**
 * A 0..1 share as a percentage: `0%`, `<0.1%`, `0.4%`, `1.2%`, `42%`, `99.6%`, `100%`, `250%`.
 * Short of the whole (a budget or a plan window under its limit) it never reads `100%`, and
 * a real share never reads `0%`.
 */
export function formatPct(r: number): string {
  if (!Number.isFinite(r)) return '—'
  if (r === 0) return '0%'
  if (r > 0 && r < 0.001) return '<0.1%'
  const p = r * 100
  if (p >= 99.5 && p < 100) return `${Math.min(99.9, Number(p.toFixed(1)))}%`
  return `${p >= 10 ? Math.round(p) : Number(p.toFixed(1))}%`
}

/** A count with thousands grouped: `842`, `2,500`, `1,234,567`. */
export function formatInt(n: number): string {
  return Number.isFinite(n) ? (int ??= new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 })).format(n) : '—'
}

/**
 * The mark after an amount that counts `unpriced` calls of a model with no known price as $0
 * (an answer's `unpriced_requests`), as the dashboard's UnpricedMark writes it: ` + 3 unpriced`
 * after an amount, ` 3 unpriced` at $0 (`amount`), '' when there are none (or the count is
 * unknown: an older server's answer). The amount it follows is then a lower bound.
 */
export function unpricedMark(unpriced: number | null | undefined, amount: number): string {
  if (typeof unpriced !== 'number' || !(unpriced > 0)) return ''
  return `${amount > 0 ? ' + ' : ' '}${formatInt(unpriced)} unpriced`
}
