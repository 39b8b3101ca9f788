import { CALL_COLUMNS } from '../ledger/columns'
import type { CallRecord } from '../ledger/record'
import type { SqlStore } from '../storage/sql'
import type { IngestRow } from './validate'

const COLUMNS = [...CALL_COLUMNS, 'origin_id'] as const

/**
 * One ingested call, stored unless this member sent the same id before: the unique index
 * `calls_origin (member, origin_id)` decides, in the database, so two team instances on one
 * PostgreSQL taking the same replayed batch still store each call once.
 */
export const INSERT_INGESTED_SQL = `INSERT INTO calls (${COLUMNS.join(', ')})
  VALUES (${COLUMNS.map((c) => '@' + c).join(', ')})
  ON CONFLICT (member, origin_id) WHERE origin_id IS NOT NULL DO NOTHING`

const STORED_SQL = 'SELECT ts, model, cost_usd FROM calls WHERE member = @member AND origin_id = @origin_id'

/** Folds freshly stored calls into the dashboard's rollups, inside the same transaction. */
export type FoldRollups = (tx: SqlStore, rows: readonly CallRecord[]) => Promise<void>

export interface Stored {
  /** Calls stored now. */
  stored: CallRecord[]
  /**
   * Calls whose id this member already used for a different call (another time, model or
   * cost): not a resend but a sender whose ledger started again (a new data folder under the
   * same token). Not stored, and not counted as duplicates, so the loss is said out loud.
   */
  clashes: IngestRow[]
}

/**
 * Stores a batch of ingested calls and their rollups in one transaction: either all of the new
 * ones are stored and counted, or (the database refused) none is and the sender tries again.
 * The calls neither stored nor clashing were duplicates.
 */
export async function storeIngested(store: SqlStore, rows: readonly IngestRow[], fold: FoldRollups): Promise<Stored> {
  if (rows.length === 0) return { stored: [], clashes: [] }
  return store.transaction(async (tx) => {
    const out: Stored = { stored: [], clashes: [] }
    for (const row of rows) {
      const { origin_id, record } = row
      const params: Record<string, unknown> = { origin_id }
      for (const c of CALL_COLUMNS) params[c] = record[c]
      if ((await tx.run(INSERT_INGESTED_SQL, params)) === 1) {
        out.stored.push(record)
        continue
      }
      const before = await tx.get<{ ts: number; model: string; cost_usd: number }>(STORED_SQL, { member: record.member, origin_id })
      if (before && (before.ts !== record.ts || before.model !== record.model || before.cost_usd !== record.cost_usd)) out.clashes.push(row)
    }
    if (out.stored.length > 0) await fold(tx, out.stored)
    return out
  })
}
