/**
 * Number formatting for people: short figures in the UI ($0.0042, $12.34, $1.2k), with the
 * exact value available (`title`) wherever money is shown.
 */

import { formatUsdFull } from '../../../shared/format'

/** Shares and counts read the same in the dashboard, the tray and the CLI. */
export { formatInt, formatPct, formatUsdPair } from '../../../shared/format'

const usdCompact = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', notation: 'compact', maximumFractionDigits: 1 })
const usdExact = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 12 })
const int = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 })
const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 })

/** `$0.00`, `$0.0042`, `$0.42`, `$12.34`, `$1.2k`, `$3.4M`. */
export function formatUsd(v: number): string {
  if (!Number.isFinite(v)) return '—'
  // Under $1,000 as everywhere else (src/shared/format.ts); from there on compact, exact on hover.
  if (Math.abs(v) < 999.995) return formatUsdFull(v)
  return lowerK(usdCompact.format(v))
}

/** Dollars in full for a budget figure on its own (a projection): `$12,345.68`, as in tables. */
export { formatUsdFull }

/** Every digit the server sent (up to 12 decimals): `$0.004213579`. */
export function formatUsdExact(v: number): string {
  if (!Number.isFinite(v)) return '—'
  return usdExact.format(v)
}

/** `842`, `9,999`, `12.3k`, `1.2M`. */
export function formatTokens(n: number): string {
  if (!Number.isFinite(n)) return '—'
  return Math.abs(n) < 10_000 ? int.format(n) : lowerK(compact.format(n))
}

/**
 * A progress bar's `aria-valuenow` (0 to 100) for a 0..1 share: to a tenth, and, as formatPct,
 * never 100 short of the whole (a budget at 99.96% is 99.9, not a rounded 100).
 */
export function ariaPct(r: number): number {
  if (!(r > 0)) return 0
  if (r >= 1) return 100
  return Math.min(99.9, Number((r * 100).toFixed(1)))
}

/** A latency: `842 ms`, `1.2 s`, `2m 3s`. */
export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—'
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${Number((ms / 1000).toFixed(1))} s`
  return formatDuration(ms)
}

/** A span of time: `45s`, `12m`, `1h 4m`, `2d 3h`. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000))
  if (s < 60) return `${s}s`
  const m = Math.floor(s / 60)
  if (m < 60) return s % 60 && m < 10 ? `${m}m ${s % 60}s` : `${m}m`
  const h = Math.floor(m / 60)
  if (h < 24) return m % 60 ? `${h}h ${m % 60}m` : `${h}h`
  const d = Math.floor(h / 24)
  return h % 24 ? `${d}d ${h % 24}h` : `${d}d`
}

/**
 * Time left until a plan window resets, `ms` from now: `resets in 4h 12m`, `resets in 2d 3h 0m`;
 * under a minute `resets in <1m` (never `0m` while it has not reset), then `resetting`.
 * Minutes round up, so the countdown never reads earlier than the reset.
 */
export function formatCountdown(ms: number): string {
  if (!(ms > 0)) return 'resetting'
  if (ms < 60_000) return 'resets in <1m'
  const m = Math.ceil(ms / 60_000)
  const d = Math.floor(m / 1440)
  const h = Math.floor((m % 1440) / 60)
  return `resets in ${d ? `${d}d ` : ''}${d || h ? `${h}h ` : ''}${m % 60}m`
}

/** `just now`, `12s ago`, `5m ago`, `3h ago`, `2d ago`. */
export function formatAgo(iso: string, now = Date.now()): string {
  const ms = now - Date.parse(iso)
  if (!Number.isFinite(ms)) return '—'
  if (ms < 5_000) return 'just now'
  return `${formatDuration(ms).split(' ')[0]} ago`
}

/** A local date and time, for tooltips: `Nov 21, 2026, 18:04:05`. */
export function formatDateTime(iso: string): string {
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return '—'
  return d.toLocaleString('en-US', { month: 'short', day: 'numeric', year: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false })
}

/** A short local time for a table: `18:04:05` today, `Nov 20 18:04` before. */
export function formatTime(iso: string, now = Date.now()): string {
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return '—'
  const sameDay = new Date(now).toDateString() === d.toDateString()
  return sameDay
    ? d.toLocaleTimeString('en-US', { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false })
    : d.toLocaleString('en-US', { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hour12: false })
}

/** An axis label for a bucket start, by how long the whole window is: `14:05`, `Nov 21 14:00`, `Nov 21`. */
export function formatBucket(iso: string, bucketSeconds: number, spanSeconds: number): string {
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return '—'
  if (bucketSeconds >= 86_400) return d.toLocaleDateString('en-US', { month: 'short', day: 'numeric' })
  const time = d.toLocaleTimeString('en-US', { hour: '2-digit', minute: '2-digit', hour12: false })
  if (spanSeconds <= 86_400) return time
  return `${d.toLocaleDateString('en-US', { month: 'short', day: 'numeric' })} ${time}`
}

function lowerK(s: string): string {
  return s.replace(/K$/, 'k')
}
