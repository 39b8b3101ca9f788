/**
 * Whether a refusal is one an agent should stop on rather than retry: a budget or loop refusal
 * (a 429). A per-minute rate limit (`rate_limited`) is meant to be retried, and so is a refusal
 * for calls in flight alone (`x-should-retry: true`). The one test behind each client's form
 * (./codex-refusal.ts, ./gemini-refusal.ts, ./opencode-refusal.ts, ./forbidden-refusal.ts).
 */
export function isLastingRefusal(status: number, body: unknown, headers: Record<string, string>): boolean {
  return status === 429 && refusalErrorOf(body).type !== 'rate_limited' && headers['x-should-retry'] !== 'true'
}

/** A copy of the contract body's `error` (empty when it has none), for a client's form to reshape. */
export function refusalErrorOf(body: unknown): Record<string, unknown> {
  return { ...((body as { error?: object } | undefined)?.error ?? {}) }
}
