/**
 * Figures for people, shared by the dashboard (src/renderer), the tray (src/main/desktop-logic)
 * and the CLI (src/main/cli), so that one amount or share reads the same everywhere. Display
 * only: the API keeps every digit. Nothing here may import Node or DOM APIs.
 */

const usdCents = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 2 })
const usdSmall = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', maximumSignificantDigits: 2 })

/**
 * Dollars in full, for a table or a line of text: `$0.00`, amounts under a cent
 * to two significant digits (`$0.00004`, `$0.0042`), cents from one cent on, thousands grouped
 * (`$1,234,567.89`). A real spend never reads as zero, and the sign stays in front (`-$0.0050`).
 */
export function formatUsdFull(v: number): string {
  if (!Number.isFinite(v)) return '—'
  if (v === 0) return '$0.00'
  // Under a cent once rounded to two significant digits ($0.00999 is $0.01, not $0.010).
  if (Math.abs(v) < 0.01 && Math.abs(Number(v.toPrecision(2))) < 0.01) return usdSmall.format(v)
  return usdCents.format(v)
}
