import { createHash } from 'node:crypto'

/**
 * The id a threshold announced in a calendar period is kept by across restarts (./announced.ts):
 * its `crossingKey` hashed, which names the rule's pattern (a whole key, for a rule on one key).
 */
export function announcedId(crossingKey: string): string {
  return createHash('sha256').update(crossingKey).digest('hex')
}
