/**
 * Amounts (spend, requests) of calls stamped in a later period than a counter's own (ahead of its
 * clock: a team member's running fast, an agent's log imported from such a machine), kept by
 * that period's start until the counter rolls into it: the in-memory spend (../ledger/spend.ts),
 * a rule's meters (../budgets/meter.ts) and a key's monthly requests (../budgets/key-registry.ts).
 */

/** Adds `amount` (negative: moved down, never below 0) to the period starting at `start`. */
export function addLater(later: Map<number, number>, start: number, amount: number): void {
  const v = Math.max(0, (later.get(start) ?? 0) + amount)
  if (v > 0) later.set(start, v)
  else later.delete(start)
}

/** The amount kept for the period starting at `start`, now the counter's; those of the periods before it, never its, dropped. */
export function takeLater(later: Map<number, number> | null, start: number): number {
  if (later === null || later.size === 0) return 0
  const v = later.get(start) ?? 0
  for (const k of later.keys()) if (k <= start) later.delete(k)
  return v
}
