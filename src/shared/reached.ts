/**
 * How much below an amount (a limit, or a threshold of one) spend still counts as having reached
 * it, as a fraction of the amount. Spend is a sum of exact call costs in binary floating point,
 * which drifts below their decimal total: ten $0.10 calls sum to 0.9999999999999999, so a $1.00
 * limit spent to the cent let the next call through and sent no alert. A billionth of the amount
 * ($0.000000001 on $1) is far above that drift (about 1e-16 per call added) and far below any
 * price. No cost is rounded: only these comparisons allow for it.
 */
export const DRIFT = 1e-9

/** The spend at which `amount` counts as reached. */
export function reachedAt(amount: number): number {
  return amount - Math.abs(amount) * DRIFT
}

/** Whether `spent` has reached `amount` (within DRIFT). */
export function reached(spent: number, amount: number): boolean {
  return spent >= reachedAt(amount)
}

/**
 * A spend's share of its limit (spent / limit) for people and the budgets API: 1 for a limit of 0
 * once anything is spent (or the limit is 0), and at least 1 once the limit counts as reached,
 * so a limit the proxy enforces never reads `99.9%` or "near" (0.9999999999999999 of $1.00).
 */
export function budgetShare(spent: number, limit: number): number {
  if (!(limit > 0)) return spent > 0 || limit === 0 ? 1 : 0
  const share = spent / limit
  return reached(spent, limit) ? Math.max(1, share) : share
}
