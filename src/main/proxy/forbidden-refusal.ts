import { isLastingRefusal } from './lasting-refusal'

/**
 * Qwen Code (0.24) and Cline's CLI (3.0) retry a 429 whatever its `x-should-retry` says: Qwen Code
 * after its `Retry-After` (for a daily budget, hours of a stranded agent), Cline five times over a
 * minute. Both stop at once on a 403. So a budget or loop refusal meant for either is a 403 with
 * the contract's error, recorded as the 429 it is. A per-minute rate limit is meant to be retried
 * and keeps its 429, as does a refusal for calls in flight alone (`x-should-retry: true`).
 */
export const STOPS_ON_403 = new Set(['qwen-code', 'cline'])

/** The status `client` is answered with for a refusal of `status`. */
export function forbiddenStatus(client: string, status: number, body: unknown, headers: Record<string, string>): number {
  return STOPS_ON_403.has(client) && isLastingRefusal(status, body, headers) ? 403 : status
}
