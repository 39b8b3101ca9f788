import { isLastingRefusal, refusalErrorOf } from './lasting-refusal'

/**
 * Codex CLI retries a 429 after its `Retry-After`, which for a budget means hours of a stranded
 * agent; it stops at once, and tells the user, only on an error typed `usage_limit_reached` (the
 * form of ChatGPT's own plan limits). So a budget or loop refusal meant for Codex takes that type,
 * keeping the contract's type in `code` and our message, with `resets_at` (unix seconds) from its
 * Retry-After. A per-minute rate limit is meant to be retried and keeps its own type, and so does
 * a refusal for calls in flight alone (`x-should-retry: true`, a Retry-After of seconds).
 */
export function codexRefusalError(status: number, body: unknown, headers: Record<string, string>): Record<string, unknown> {
  const error = refusalErrorOf(body)
  // A refusal to retry soon (a per-minute limit, calls in flight that may end) keeps its type.
  if (isLastingRefusal(status, body, headers)) {
    error.code = error.type
    error.type = 'usage_limit_reached'
    const after = Number(headers['retry-after'])
    if (Number.isFinite(after) && after > 0) error.resets_at = Math.ceil(Date.now() / 1000 + after)
  }
  return error
}
