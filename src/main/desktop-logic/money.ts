import { formatUsdPair as fullPair } from '../../shared/format'

const USD = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 2 })

/**
 * Dollars for a person to glance at (tray, notifications): cents, thousands separators,
 * and "<$0.01" for a spend that is real but under a cent, so it never reads as nothing.
 * Display only: the ledger keeps the exact amount.
 */
export function formatUsd(usd: number): string {
  if (!Number.isFinite(usd)) return '$—'
  if (usd > 0 && usd < 0.005) return '<$0.01'
  return USD.format(usd === 0 ? 0 : usd)
}

/**
 * A spend and its limit (a budget line or notice): as `formatUsd`, except that two amounts that
 * differ never read the same: `$9.996` of `$10.00`, not `$10.00` of `$10.00` while calls still
 * go through (the dashboard's formatUsdPair, src/shared/format.ts).
 */
export function formatUsdOfLimit(spent: number, limit: number): [string, string] {
  const pair: [string, string] = [formatUsd(spent), formatUsd(limit)]
  return pair[0] === pair[1] && spent !== limit ? fullPair(spent, limit) : pair
}
