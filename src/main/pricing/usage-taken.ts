import type { TokenChange } from '../dashboard/rollup/adjust'
import type { Usage } from '../metering/usage'
import { usageExtra } from '../metering/usage-extra'
import type { SqlStore } from '../storage/sql'

/**
 * A stored call taking a newer usage than the one it was recorded with: an imported answer that
 * grew while it was written (../import/grown.ts), a background response's real usage replacing
 * its estimate (./background.ts). Both write the row the same way and move the rollups and the
 * metrics by the same token difference (./moves.ts); each keeps its own guard in its WHERE.
 */

/**
 * Ends the SELECT that reads the call back in the transaction that then updates it: on PostgreSQL
 * the row is locked from that read on, so that a re-price (./reprice.ts) committing in between
 * cannot change the cost the move is counted from (SQLite's write transaction already excludes it).
 */
export const lockedRead = (tx: SqlStore): string => (tx.dialect === 'postgres' ? ' FOR UPDATE' : '')

/** The token columns of a stored call, as read back before it takes the new usage. */
export interface StoredTokens {
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  reasoning_tokens: number
}

/** The SET list that writes a usage and its cost into a `calls` row (parameters: `usageParams`). */
export const SET_USAGE =
  `input_tokens = @input, output_tokens = @output, cache_read_tokens = @cacheRead, cache_write_tokens = @cacheWrite,
   cache_write_1h_tokens = @cacheWrite1h, reasoning_tokens = @reasoning, usage_extra = @extra, cost_usd = @cost, priced = @priced`

/** The parameters of `SET_USAGE`: usage `u`, priced at `cost`. */
export function usageParams(u: Usage, cost: number, priced: boolean): Record<string, number | string | null> {
  return {
    input: u.input_tokens, output: u.output_tokens, cacheRead: u.cache_read_tokens, cacheWrite: u.cache_write_tokens,
    cacheWrite1h: u.cache_write_1h_tokens, reasoning: u.reasoning_tokens, cost, priced: priced ? 1 : 0,
    // Its searches (and any other part billed apart) kept as the recorder keeps them: re-pricing it later charges them again.
    extra: usageExtra(u),
  }
}

/** What the call's token counts move by when `was` becomes `u` (`CostMoves.add`). */
export function tokensGained(was: StoredTokens, u: Usage): TokenChange {
  return {
    input_tokens: u.input_tokens - was.input_tokens,
    output_tokens: u.output_tokens - was.output_tokens,
    cache_read_tokens: u.cache_read_tokens - was.cache_read_tokens,
    cache_write_tokens: u.cache_write_tokens - was.cache_write_tokens,
    reasoning_tokens: u.reasoning_tokens - was.reasoning_tokens,
  }
}
