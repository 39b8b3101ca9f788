import { feedIdOf } from '../budgets/feed/publish'
import type { SpendMover } from '../budgets/state/pg/call-spend'
import { emptyUsage } from '../metering/usage'
import { CostMoves } from '../pricing/moves'
import type { Pricer } from '../pricing/price'
import { lockedRead, SET_USAGE, tokensGained, usageParams } from '../pricing/usage-taken'
import type { SqlStore } from '../storage/sql'
import { IMPORTED_COLUMNS, type ImportedRow, proxiedTwin, type Superseded, supersede } from './supersede'
import type { LoggedCall } from './types'

export type { Superseded } from './supersede'

/** A logged call whose key was imported before, and the ledger call its key names. */
export interface Grown {
  id: number
  call: LoggedCall
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
 * came in (./supersede.ts): its tokens and cost go to 0, moving everything above by minus them
 * and by one request less, so the answer is the proxy's, counted once; its row stays, naming the
 * proxy's (a team server may hold it: the revision sends it again, at 0). Its import keys are
 * then the proxy's call's (`superseded`).
 * An imported call stored as money that a later line of its log names a plan's is re-classed
 * (LoggedCall.reclass, `reclassed`: reclass below).
 * Resolves to the moves, to publish once committed (null: nothing moved).
 */
export async function completeImported(
  store: SqlStore,
  grown: readonly Grown[],
  pricer: Pricer,
  /** PostgreSQL: the shared spend rows, moved in the same transaction. */
  moveSpend?: SpendMover,
  /** SQLite: leaves a notice of each move in the same transaction, for a server beside (../ledger/notices.ts); `requests` -1: superseded. */
  noticeMoved?: (id: number, delta: number, requests?: number) => void,
  /**
   * SQLite: the same, of a call re-classed (./grown.ts reclass): its money `delta` leaves, counted
   * under provider `was` (left by any import: a server's own moves no money, as it moves its spend itself).
   */
  noticeReclassed?: (id: number, delta: number, was: string) => void,
): Promise<{ moves: CostMoves; updated: number; reclassed: number; delta: number; superseded: Superseded[] } | null> {
  if (grown.length === 0) return null
  const out = await store.transaction(async (tx) => {
    const moves = await CostMoves.in(tx)
    let updated = 0
    let reclassed = 0
    let delta = 0
    const superseded: Superseded[] = []
    for (const { id, call: c } of grown) {
      const row = await tx.get<ImportedRow>(`SELECT ${IMPORTED_COLUMNS} FROM calls WHERE id = @id AND source = 'import'${lockedRead(tx)}`, { id })
      // Superseded already (when the proxy recorded it, or at an earlier read): the proxy's record is the answer's.
      if (!row || row.superseded_by !== null) continue
      const twin = row.response_id ? await proxiedTwin(tx, row.response_id) : undefined
      if (twin !== undefined) {
        // The proxy's record is the answer's: this one takes no tokens and no money (0 is exact).
        if (await supersede(tx, row, twin, moves)) {
          superseded.push({ id, twin })
          delta -= row.cost_usd
          // Whatever it cost (a plan's call, one at $0): it is one request less of its key there too.
          noticeMoved?.(id, -row.cost_usd, -1)
        }
        continue
      }
      const u = c.usage
      if (c.reclass && c.billing === 'subscription' && row.billing !== 'subscription') {
        const moved = await reclass(tx, row, c, pricer, moves)
        if (moved === null) continue
        reclassed++
        delta += moved.cost - row.cost_usd
        // Its money leaves the spend of a server beside (`burnrate import`), under the provider it was counted by.
        noticeReclassed?.(id, -row.cost_usd, row.provider)
        continue
      }
      // Larger as the log reader measures an answer's lines (its largest usage is the answer's).
      if (u.input_tokens + u.output_tokens <= row.input_tokens + row.output_tokens) continue
      // Priced at the call's recorded time, as it was when first imported.
      const p = c.model ? pricer.price(c.pricingId, c.provider, c.model, u, new Date(row.ts)) : { cost_usd: 0, priced: false }
      const changed = await tx.run(
        `UPDATE calls SET ${SET_USAGE}
          WHERE id = @id AND input_tokens = @wasInput AND output_tokens = @wasOutput AND cost_usd = @wasCost`,
        { id, ...usageParams(u, p.cost_usd, p.priced), wasInput: row.input_tokens, wasOutput: row.output_tokens, wasCost: row.cost_usd },
      )
      if (changed === 0) continue
      updated++
      delta += p.cost_usd - row.cost_usd
      moves.add({ ...row, source: 'import' }, p.cost_usd - row.cost_usd, tokensGained(row, u))
      if (p.cost_usd !== row.cost_usd) noticeMoved?.(id, p.cost_usd - row.cost_usd)
    }
    // PostgreSQL: the other instances move their meters and today's spend too (the calls feed).
    await moves.apply(tx, { shared: moveSpend, feedId: tx.dialect === 'postgres' ? feedIdOf(store) : undefined })
    return { moves, updated, reclassed, delta, superseded }
  })
  return out.updated > 0 || out.reclassed > 0 || out.superseded.length > 0 ? out : null
}

/**
 * Imported call `row` (read back in `tx`, locked on PostgreSQL), stored as money, is a plan's, as
 * a later line of its log says (LoggedCall.reclass): it takes the plan's provider and billing, and
 * the log's usage should it have grown, priced at the call's recorded time, as a first read of the
 * whole log stores it. Everything that counted it moves from what it was to what it is
 * (CostMoves.reclass): its money leaves the spend, its API-equivalent value is the plan's. Resolves
 * to its cost now, or null when nothing changed (another writer changed the row since it was read,
 * or the log's usage is smaller than the row's: the row is left as it is).
 */
async function reclass(tx: SqlStore, row: ImportedRow, c: LoggedCall, pricer: Pricer, moves: CostMoves): Promise<{ cost: number } | null> {
  const u = c.usage
  if (u.input_tokens + u.output_tokens < row.input_tokens + row.output_tokens) return null
  const p = c.model ? pricer.price(c.pricingId, c.provider, c.model, u, new Date(row.ts)) : { cost_usd: 0, priced: false }
  const changed = await tx.run(
    `UPDATE calls SET ${SET_USAGE}, provider = @provider, billing = @billing
      WHERE id = @id AND billing = @wasBilling AND provider = @wasProvider AND input_tokens = @wasInput AND output_tokens = @wasOutput AND cost_usd = @wasCost`,
    {
      id: row.id, ...usageParams(u, p.cost_usd, p.priced), provider: c.provider, billing: 'subscription',
      wasBilling: row.billing, wasProvider: row.provider, wasInput: row.input_tokens, wasOutput: row.output_tokens, wasCost: row.cost_usd,
    },
  )
  if (changed === 0) return null
  const was = { ...row, source: 'import' }
  moves.reclass(was, row.cost_usd, tokensGained(row, emptyUsage()), { ...was, provider: c.provider, billing: 'subscription' }, p.cost_usd, tokensGained(NO_TOKENS, u))
  return { cost: p.cost_usd }
}

const NO_TOKENS = { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0 }
