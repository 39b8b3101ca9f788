import { isObject } from '../metering/usage'
import { type MeterReading, type MeterWindow, num, resetTime } from './types'

/**
 * Gemini Code Assist's quotas (Gemini CLI logged in with Google): the answer to
 * `POST /v1internal:retrieveUserQuota`, which the CLI asks for before its model calls, is
 * `{buckets: [{modelId, tokenType, remainingFraction, remainingAmount?, resetTime}]}`
 * (gemini-cli's config.refreshUserQuota reads it the same way). Each model's bucket is a window
 * named after the model: its utilization is the used share (1 - remainingFraction), its reset the
 * bucket's; a model's second bucket (another token type) is `<model>_<token type>`. Code Assist
 * does not say how long a window is (`window_minutes` is null).
 */
export function readCodeAssistQuota(body: unknown): MeterReading | null {
  if (!isObject(body) || !Array.isArray(body.buckets)) return null
  const read: { model: string; type: string; remaining: number; absent: boolean; bucket: Record<string, unknown> }[] = []
  for (const b of body.buckets) {
    if (!isObject(b) || typeof b.modelId !== 'string' || !b.modelId) continue
    // Proto3's JSON leaves out a field at its default: a used-up bucket comes with its model and
    // reset but no remainingFraction (nor remainingAmount), which is 0 left.
    const absent = b.remainingFraction === undefined && !Number(b.remainingAmount ?? 0) && typeof b.resetTime === 'string' && b.resetTime !== ''
    const remaining = absent ? 0 : typeof b.remainingFraction === 'number' ? b.remainingFraction : num(typeof b.remainingFraction === 'string' ? b.remainingFraction : undefined)
    if (remaining === null || !Number.isFinite(remaining)) continue
    read.push({ model: b.modelId, type: typeof b.tokenType === 'string' ? b.tokenType : '', remaining, absent, bucket: b })
  }
  // A model's window under its own name is the same bucket whatever the order they came in (Code
  // Assist promises none): its requests' (REQUESTS), else one naming no token type, else the first
  // token type by name; its other buckets are `<model>_<token type>`.
  const rank = (type: string) => (type === 'REQUESTS' ? '0' : type === '' ? '1' : `2${type}`)
  const primary = new Map<string, string>()
  for (const r of read) {
    const p = primary.get(r.model)
    if (p === undefined || rank(r.type) < rank(p)) primary.set(r.model, r.type)
  }
  const windows: MeterWindow[] = []
  const details: Record<string, string> = {}
  const seen = new Set<string>()
  for (const { model, type, remaining, absent, bucket: b } of read) {
    const name = type === primary.get(model) ? model : type ? `${model}_${type.toLowerCase()}` : null
    if (name === null || seen.has(name)) continue
    seen.add(name)
    windows.push({
      name,
      utilization: Math.min(1, Math.max(0, 1 - remaining)),
      resets_at: resetTime(typeof b.resetTime === 'string' ? b.resetTime : undefined),
      status: '',
      window_minutes: null,
    })
    if (typeof b.remainingAmount === 'string' || typeof b.remainingAmount === 'number') details[`${name}-remaining`] = String(b.remainingAmount)
    else if (absent) details[`${name}-remaining`] = '0'
  }
  return windows.length > 0 ? { kind: 'plan', windows, details } : null
}
