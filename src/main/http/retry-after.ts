/** Retry-After as ms from `now`: delta-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfter(value: string | null | undefined, now = Date.now()): number | null {
  if (value === null || value === undefined) return null
  const v = value.trim()
  if (/^\d+$/.test(v)) return Number(v) * 1000
  const at = Date.parse(v)
  return Number.isFinite(at) ? Math.max(0, at - now) : null
}
