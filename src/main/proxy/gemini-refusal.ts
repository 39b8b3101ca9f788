import { isLastingRefusal, refusalErrorOf } from './lasting-refusal'

/**
 * Gemini CLI (0.61, packages/core/src/utils/retry.ts `retryWithBackoff`) ignores `x-should-retry`
 * and takes a 429 whose body is not a Google error it can classify for a transient one: it retries
 * it 10 times with backoff (minutes of a stuck agent, ten recorded refusals). It stops at once, and
 * shows the error's message, on a `TerminalQuotaError` (packages/core/src/utils/googleQuotaErrors.ts
 * `classifyGoogleError`), which a Google error body
 * `{"error": {"code": 429, "message", "status": "RESOURCE_EXHAUSTED", "details": [...]}}` is when its
 * details hold an `ErrorInfo` with reason `QUOTA_EXHAUSTED` from Cloud Code's domain: whatever its
 * `RetryInfo` says, or with none (a session cap or a loop, which never reset), and with the
 * message unchanged. (The other terminal forms need a `RetryInfo` over 300 s, which a daily limit
 * a few minutes from its reset and a loop do not have, replace the message with Google's own, or
 * are capacity errors it retries silently.) So a budget or loop refusal meant for Gemini CLI takes
 * that form, with the contract's fields beside Google's, and a `RetryInfo` of its Retry-After
 * (which Gemini CLI shows as when access resets). A per-minute rate limit is meant to be retried and
 * keeps the contract's form, as does a refusal for calls in flight alone (`x-should-retry: true`).
 */
export function geminiRefusalBody(status: number, body: unknown, headers: Record<string, string>): Record<string, unknown> | undefined {
  if (!isLastingRefusal(status, body, headers)) return undefined
  const error = refusalErrorOf(body)
  const details: Record<string, unknown>[] = [
    {
      '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
      reason: 'QUOTA_EXHAUSTED',
      domain: 'cloudcode-pa.googleapis.com',
      metadata: { burnrate_error_type: String(error.type ?? '') },
    },
  ]
  const after = Number(headers['retry-after'])
  if (Number.isFinite(after) && after > 0) details.push({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${Math.ceil(after)}s` })
  return { error: { ...error, code: 429, status: 'RESOURCE_EXHAUSTED', details } }
}
