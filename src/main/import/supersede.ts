import { emptyUsage } from '../metering/usage'
import type { CostMoves, MovedCall } from '../pricing/moves'
import { SET_USAGE, type StoredTokens, tokensGained, usageParams } from '../pricing/usage-taken'
import type { SqlStore } from '../storage/sql'

/*
 * An imported call whose answer the proxy recorded too (the same provider message id: a Claude
 * Code answer imported while one of its content blocks still streamed, past the import's wait)
 * gives way to the proxy's record: 0 tokens, $0, `superseded_by` naming that record, and no longer
 * a request. Its row stays (the audit trail; a team server may hold it). Done when the log is
 * read again (./grown.ts).
 */

/** An imported call as read back: what it is counted by, its tokens and cost, and what identifies its answer. */
export interface ImportedRow extends MovedCall, StoredTokens {
  cost_usd: number
  response_id: string | null
  /** PostgreSQL: `import:` and the SHA-256 of its import key (./write-postgres.ts importCallKey). */
  call_key: string | null
  superseded_by: number | null
}

export const IMPORTED_COLUMNS = `id, ts, endpoint, provider, model, api_key_hash, tenant, agent, session, project, member, requested_model, billing,
  input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd, response_id, call_key, superseded_by`

/** The proxy's record of answer `rid` (its first), if it has one. */
export async function proxiedTwin(tx: SqlStore, rid: string): Promise<number | undefined> {
  const twin = await tx.get<{ id: number }>("SELECT id FROM calls WHERE response_id = @rid AND response_id <> '' AND source = 'proxy' ORDER BY id LIMIT 1", { rid })
  return twin?.id
}

/**
 * Imported call `row` (read back in `tx`, locked on PostgreSQL) gives way to `twin`: moved by minus
 * its cost and tokens and by one request less (`moves`). False when another writer changed the
 * row since it was read.
 */
export async function supersede(tx: SqlStore, row: ImportedRow, twin: number, moves: CostMoves): Promise<boolean> {
  const changed = await tx.run(
    `UPDATE calls SET ${SET_USAGE}, superseded_by = @twin
      WHERE id = @id AND superseded_by IS NULL AND input_tokens = @wasInput AND output_tokens = @wasOutput AND cost_usd = @wasCost`,
    { id: row.id, twin, ...usageParams(emptyUsage(), 0, true), wasInput: row.input_tokens, wasOutput: row.output_tokens, wasCost: row.cost_usd },
  )
  if (changed === 0) return false
  moves.add({ ...row, source: 'import' }, -row.cost_usd, tokensGained(row, emptyUsage()), undefined, -1)
  return true
}

/** An imported call superseded, and the proxied call that superseded it. */
export interface Superseded {
  id: number
  twin: number
}
