import { isObject } from '../metering/usage'
import { durationMs } from './key-limits'
import type { MeterReading } from './types'

/**
 * Gemini Code Assist refusing a model call because a quota is used up: HTTP 429 with a google.rpc
 * error, `{error: {code, message, status: "RESOURCE_EXHAUSTED", details}}` (one such object in an
 * array from `:streamGenerateContent`). Read as gemini-cli's googleQuotaErrors.ts reads it: an
 * ErrorInfo whose reason is `QUOTA_EXHAUSTED` is a quota gone until its reset (a day's, on Code
 * Assist), and names the model whose quota it is (`metadata.model`); its wait is the RetryInfo's
 * `retryDelay` (or the ErrorInfo's `quotaResetDelay`, else `quotaResetTimeStamp`). That model's
 * window is full (utilization 1, status `rejected`), until `now` + the wait; a refusal that gives
 * none leaves the window's known reset (../tracker.ts keeps it). Anything else (a per-minute limit,
 * `RATE_LIMIT_EXCEEDED`, which gemini-cli retries; capacity; a 429 naming no reason) is null: it
 * says nothing of the day's quota.
 */
export function readCodeAssistRefusal(body: unknown, requestModel: string, now = Date.now()): MeterReading | null {
  const outer: unknown = Array.isArray(body) ? body[0] : body
  const error = isObject(outer) ? outer.error : undefined
  if (!isObject(error) || !Array.isArray(error.details)) return null
  const info = detail(error.details, 'ErrorInfo')
  if (!info || info.reason !== 'QUOTA_EXHAUSTED') return null
  const meta = isObject(info.metadata) ? info.metadata : {}
  const model = typeof meta.model === 'string' && meta.model ? meta.model : requestModel.replace(/^models\//, '')
  if (!model) return null
  // protobuf's JSON duration (`"33740.910400305s"`) or Go's (`"161h39m41.300432511s"`, `"539.477544ms"`)
  const wait = durationMs(text(detail(error.details, 'RetryInfo')?.retryDelay)) ?? durationMs(text(meta.quotaResetDelay))
  const stamp = typeof meta.quotaResetTimeStamp === 'string' ? Date.parse(meta.quotaResetTimeStamp) : NaN
  const resets = wait !== null ? Math.round(now + wait) : Number.isFinite(stamp) ? stamp : null
  return {
    kind: 'plan',
    windows: [{ name: model, utilization: 1, resets_at: resets, status: 'rejected', window_minutes: null }],
    details: { [`${model}-remaining`]: '0' },
  }
}

/** The first detail of a google.rpc type (`ErrorInfo`, `RetryInfo`), its `@type` key read as gemini-cli reads it (trimmed). */
function detail(details: unknown[], type: string): Record<string, unknown> | undefined {
  for (const d of details) {
    if (!isObject(d)) continue
    const key = Object.keys(d).find((k) => k.trim() === '@type')
    if (key && d[key] === `type.googleapis.com/google.rpc.${type}`) return d
  }
  return undefined
}

function text(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined
}
