/** A group's sums, as a report's rows (../report/types.ts) and the dashboard's costs (./costs.ts) have them. */
export interface GroupSums {
  requests: number
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  cost_usd: number
}

/** Under this an amount is $0 (a nano-dollar, as ../report/sessions.ts reads a session total). */
const NANO_USD = 1e-9

/**
 * Whether a group's summed rows make it a group: they count a request, or hold money or tokens.
 * A group whose only calls were imported ones the proxy's record superseded
 * (../import/supersede.ts) has none of these: its rollup rows, folded before the supersede, were
 * moved back to 0 requests, 0 tokens and $0, where a read of the calls (or a rebuild of the
 * rollups) has no such group. A report row a re-price wrote with its money and no call
 * (./rollup/adjust.ts) is one: that money shows.
 */
export function isGroup(r: GroupSums): boolean {
  return (
    r.requests !== 0 ||
    Math.abs(r.cost_usd) >= NANO_USD ||
    r.input_tokens !== 0 ||
    r.output_tokens !== 0 ||
    r.cache_read_tokens !== 0 ||
    r.cache_write_tokens !== 0
  )
}
