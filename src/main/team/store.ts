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

/** Folds freshly stored calls into the dashboard's rollups, inside the same transaction. */
export type FoldRollups = (tx: SqlStore, rows: readonly CallRecord[]) => Promise<void>

/**
 * Stores a batch of ingested calls and their rollups in one transaction: either all of the new
 * ones are stored and counted, or (the database refused) none is and the sender tries again.
 * Returns the calls stored now; the rest were duplicates.
 */
export async function storeIngested(store: SqlStore, rows: readonly IngestRow[], fold: FoldRollups): Promise<CallRecord[]> {
  if (rows.length === 0) return []
  return store.transaction(async (tx) => {
    const stored: CallRecord[] = []
    for (const { origin_id, record } of rows) {
      const params: Record<string, unknown> = { origin_id }
      for (const c of CALL_COLUMNS) params[c] = record[c]
      if ((await tx.run(INSERT_INGESTED_SQL, params)) === 1) stored.push(record)
    }
    if (stored.length > 0) await fold(tx, stored)
    return stored
  })
}
