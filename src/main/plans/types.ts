import type { IncomingHttpHeaders } from 'node:http'

/** One usage window as a vendor's response headers report it. */
export interface MeterWindow {
  /** `5h`, `7d`, `7d_opus`…; `requests`, `tokens`… for per-key limits. */
  name: string
  /** 0..1 */
  utilization: number
  /** ms since the epoch, or null. */
  resets_at: number | null
  /** The vendor's word for the window (`allowed`, `allowed_warning`, `rejected`), or ''. */
  status: string
  window_minutes: number | null
}

/** What one response's headers say about the account's meter. */
export interface MeterReading {
  /** `plan` for a subscription's usage windows, `key` for an API key's rate limits. */
  kind: 'plan' | 'key'
  windows: MeterWindow[]
  /** Account-wide fields, every header of the family that is not a window's, as it came (new ones too). */
  details: Record<string, string>
}

/** Reads one vendor's header family; null when the response carries none of it. */
export type MeterReader = (headers: IncomingHttpHeaders) => MeterReading | null

export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name]
  return Array.isArray(v) ? v[0] : v
}

export function num(v: string | undefined): number | null {
  if (v === undefined || v.trim() === '') return null
  const n = Number(v)
  return Number.isFinite(n) ? n : null
}

/** An epoch in seconds (or ms when it is that large), or an RFC 3339 / HTTP date: ms since the epoch. */
export function resetTime(v: string | undefined): number | null {
  if (v === undefined || v.trim() === '') return null
  const n = num(v)
  if (n !== null) return n < 10_000_000_000 ? Math.round(n * 1000) : Math.round(n)
  const t = Date.parse(v)
  return Number.isFinite(t) ? t : null
}
