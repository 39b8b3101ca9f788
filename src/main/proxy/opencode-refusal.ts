import { isLastingRefusal, refusalErrorOf } from './lasting-refusal'

/**
 * opencode (1.18, packages/opencode/src/session/retry.ts) retries an API error up to 5 times, each
 * after its `Retry-After` (for a daily budget, hours of a stranded agent), unless its status is
 * none of 408, 409, 429 or 5xx (nor 404 for an OpenAI provider) and neither its message nor its
 * body matches one of the patterns below (any "429" or "500" in it, "rate limit", "try again
 * later"...). So a budget or loop refusal meant for opencode is a 403 with the contract's error
 * (plus Anthropic's top-level `"type": "error"`, so its SDK reads our message), with any text
 * those patterns would match broken by an invisible U+2060 and a number they would match left out.
 * A per-minute rate limit is meant to be retried and keeps its 429, as does a refusal for calls in
 * flight alone (`x-should-retry: true`).
 *
 * No other form stops it with a plain message: every API error's message and body are tested
 * against these patterns whatever its status or shape (only a context overflow skips them, and that
 * makes opencode compact the conversation and call again).
 */
const RETRIED = [
  /429|500|502|503|504|524/i,
  /rate increased too quickly|rate limit|rate-limit|rate_limit|too many requests/i,
  /overloaded|service unavailable|service_unavailable|service-unavailable|internal error|internal_error|internal server error|server error|server_error|server-error|provider returned error|provider_returned_error|provider-returned-error/i,
  /terminated|fetch failed|failed to fetch|network[-_\s]error|upstream connect|connection error|connection refused|connection lost|socket connection was closed|socket hang up|reset before headers|getaddrinfo|enotfound|eai_again|econnrefused|econnreset|etimedout/i,
  /\b(?:request|response|connection|network|stream|read) (?:timeout|timed out|time out)\b/i,
  /try your request again|retry your request|resource exhausted|resource_exhausted|exhausted|unavailable|too_many_requests/i,
  /\btry again (?:later|in\b)|\b(?:currently|temporarily) at capacity\b/i,
]

/** `text` with every match of RETRIED broken after its first character by U+2060 (WORD JOINER), which shows as nothing. */
export function unretriedText(text: string): string {
  let out = text
  for (let i = 0; i < 20; i++) {
    const re = RETRIED.find((r) => r.test(out))
    if (!re) return out
    out = out.replace(new RegExp(re.source, 'gi'), (m) => `${m[0]}\u2060${m.slice(1)}`)
  }
  return out
}

export interface OpencodeRefusal {
  status: number
  body: Record<string, unknown>
}

/** The refusal opencode stops on, or undefined when the refusal is one to retry (it keeps its form). */
export function opencodeRefusal(status: number, body: unknown, headers: Record<string, string>): OpencodeRefusal | undefined {
  if (!isLastingRefusal(status, body, headers)) return undefined
  const error = refusalErrorOf(body)
  const safe: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(error)) {
    if (typeof v === 'string') safe[k] = unretriedText(v)
    else if (typeof v === 'number' && RETRIED.some((r) => r.test(String(v)))) continue
    else safe[k] = v
  }
  return { status: 403, body: { type: 'error', error: safe } }
}

/**
 * The headers of opencode's refusal over the Responses WebSocket (./ws/frames.ts). opencode's
 * socket fetch (1.18.33, its `OpenAIWebSocket`) answers its own request with an error frame's
 * `status`, its `headers` as the response's headers and the whole frame as the body its retry
 * patterns are tested against: a header is kept only if it is printable ASCII (a header value
 * must be, or opencode's Response throws and it retries the socket) and neither its name nor its
 * value matches a pattern (a `retry-after` of 15000 seconds holds "500").
 */
export function opencodeFrameHeaders(headers: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {}
  for (const [k, v] of Object.entries(headers)) {
    if (/^[\x20-\x7e]*$/.test(`${k}${v}`) && !RETRIED.some((r) => r.test(k) || r.test(v))) kept[k] = v
  }
  return kept
}
