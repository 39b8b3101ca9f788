import { feedIdOf } from '../budgets/feed/publish'
import type { SpendMover } from '../budgets/state/pg/call-spend'
import { CostMoves, type MovedCall } from '../pricing/moves'
import { emptyUsage } from '../metering/usage'
import type { Pricer } from '../pricing/price'
import { lockedRead, SET_USAGE, type StoredTokens, tokensGained, usageParams } from '../pricing/usage-taken'
import type { SqlStore } from '../storage/sql'
import type { LoggedCall } from './types'

/** A logged call whose key was imported before, and the ledger call its key names. */
export interface Grown {
  id: number
  call: LoggedCall
}

/** The imported call as read back: what it is counted by, its tokens and its cost. */
interface Row extends MovedCall, StoredTokens {
  cost_usd: number
  response_id: string | null
}

/** An imported call the proxy's record of the same answer superseded (`completeImported`), and that record. */
export interface Superseded {
  id: number
  twin: number
}

/**
 * Imported calls whose log entry has grown since they were read: an answer still being written
 * then (Claude Code writes one line per content block, the first ones with a partial usage;
 * opencode updates a message as its steps finish) take the larger usage and its cost. Only calls
 * this import stored (`source: "import"`): a proxied twin is the answer's own record. Its row,
 * the rollups, the spend rows and today's spend move together, as re-pricing moves them
 * (../pricing/moves.ts), in one transaction. The row changes only if it still has the usage read
 * (another import completing it at once moves nothing twice); on PostgreSQL it is locked from that
 * read on, so a re-price committing in between is waited for rather than losing the larger usage.
 *
 * An imported call whose answer the proxy has recorded since (the same message id: imported while
 * it still streamed, past the import's wait) is superseded by that record, whatever order the two
 * came in: its tokens and cost go to 0, moving everything above by minus them, so the answer's
 * money is the proxy's, counted once; its row stays (a team server may hold it: the revision
 * sends it again, at 0). Its import keys are then the proxy's call's (`superseded`).
 * Resolves to the moves, to publish once committed (null: nothing moved).
 */
export async function completeImported(
  store: SqlStore,
  grown: readonly Grown[],
  pricer: Pricer,
  /** PostgreSQL: the shared spend rows, moved in the same transaction. */
  moveSpend?: SpendMover,
  /** SQLite: leaves a notice of each move in the same transaction, for a server beside (../ledger/notices.ts). */
  noticeMoved?: (id: number, delta: number) => void,
): Promise<{ moves: CostMoves; updated: number; delta: number; superseded: Superseded[] } | null> {
  if (grown.length === 0) return null
  const out = await store.transaction(async (tx) => {
    const moves = await CostMoves.in(tx)
    let updated = 0
    let delta = 0
    const superseded: Superseded[] = []
    for (const { id, call: c } of grown) {
      const row = await tx.get<Row>(
        `SELECT id, ts, endpoint, provider, model, api_key_hash, tenant, agent, session, project, member, requested_model, billing,
                input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd, response_id
           FROM calls WHERE id = @id AND source = 'import'${lockedRead(tx)}`,
        { id },
      )
      if (!row) continue
      const twin = row.response_id
        ? await tx.get<{ id: number }>("SELECT id FROM calls WHERE response_id = @rid AND response_id <> '' AND source = 'proxy' ORDER BY id LIMIT 1", { rid: row.response_id })
        : undefined
      let u = c.usage
      let p: { cost_usd: number; priced: boolean }
      if (twin) {
        // The proxy's record is the answer's: this one takes no tokens and no money (0 is exact).
        superseded.push({ id, twin: twin.id })
        u = emptyUsage()
        p = { cost_usd: 0, priced: true }
        if (row.cost_usd === 0 && row.input_tokens + row.output_tokens + row.cache_read_tokens + row.cache_write_tokens + row.reasoning_tokens === 0) continue
      } else {
        // Larger as the log reader measures an answer's lines (its largest usage is the answer's).
        if (u.input_tokens + u.output_tokens <= row.input_tokens + row.output_tokens) continue
        // Priced at the call's recorded time, as it was when first imported.
        p = c.model ? pricer.price(c.pricingId, c.provider, c.model, u, new Date(row.ts)) : { cost_usd: 0, priced: false }
      }
      const changed = await tx.run(
        `UPDATE calls SET ${SET_USAGE}
          WHERE id = @id AND input_tokens = @wasInput AND output_tokens = @wasOutput AND cost_usd = @wasCost`,
        { id, ...usageParams(u, p.cost_usd, p.priced), wasInput: row.input_tokens, wasOutput: row.output_tokens, wasCost: row.cost_usd },
      )
      if (changed === 0) continue
      if (!twin) updated++
      delta += p.cost_usd - row.cost_usd
      moves.add({ ...row, source: 'import' }, p.cost_usd - row.cost_usd, tokensGained(row, u))
      if (p.cost_usd !== row.cost_usd) noticeMoved?.(id, p.cost_usd - row.cost_usd)
    }
    // PostgreSQL: the other instances move their meters and today's spend too (the calls feed).
    await moves.apply(tx, { shared: moveSpend, feedId: tx.dialect === 'postgres' ? feedIdOf(store) : undefined })
    return { moves, updated, delta, superseded }
  })
  return out.updated > 0 || out.superseded.length > 0 ? out : null
}
