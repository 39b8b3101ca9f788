import { applyRollups } from '../dashboard/rollup/apply'
import { CALL_COLUMNS, callValues } from '../ledger/columns'
import { PG_TYPES, pgSafe } from '../ledger/pg/insert'
import type { CallRecord } from '../ledger/record'
import type { StoredCall } from '../ledger/types'
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

/**
 * PostgreSQL: the same batch in one statement (`unnest`, one array per column), keyed on the
 * unique index `calls_origin (member, origin_id)`; RETURNING names the rows this statement
 * inserted, and exactly those go into the rollups, in the same transaction. Two team instances
 * taking the same batch at once: the second's insert waits on the first's index entries and,
 * once it commits, inserts (and counts) nothing. Rows go in by id, so two overlapping batches
 * lock their entries in one order and never wait on each other in a cycle.
 */
export const PG_INSERT_INGESTED_SQL = `INSERT INTO calls (${COLUMNS.join(', ')})
  SELECT * FROM unnest(${CALL_COLUMNS.map((c) => `@${c}::${PG_TYPES[c]}[]`).join(', ')}, @origin_id::bigint[])
  ON CONFLICT (member, origin_id) WHERE origin_id IS NOT NULL DO NOTHING
  RETURNING id, origin_id`

const PG_STORED_SQL = 'SELECT origin_id, ts, model, cost_usd FROM calls WHERE member = @member AND origin_id = ANY(@ids::bigint[])'

/** Deadlock or serialization failure: the transaction was rolled back whole and goes again. */
const MAX_TX_ATTEMPTS = 5

export async function storeIngestedPg(store: SqlStore, rows: readonly IngestRow[]): Promise<Stored> {
  if (rows.length === 0) return { stored: [], clashes: [] }
  const byId = [...rows].sort((a, b) => a.origin_id - b.origin_id).map((r) => ({ ...r, record: pgSafe(r.record) }))
  const member = byId[0].record.member ?? ''
  const params: Record<string, unknown[]> = { origin_id: byId.map((r) => r.origin_id) }
  for (const c of CALL_COLUMNS) params[c] = new Array(byId.length)
  const values: unknown[] = []
  byId.forEach((r, i) => {
    callValues(r.record, values)
    CALL_COLUMNS.forEach((c, j) => (params[c][i] = values[j]))
  })
  for (let attempt = 1; ; attempt++) {
    try {
      return await store.transaction(async (tx) => {
        const returned = await tx.all<{ id: number; origin_id: number }>(PG_INSERT_INGESTED_SQL, params)
        const ids = new Map(returned.map((r) => [r.origin_id, r.id]))
        const stored: StoredCall[] = []
        const others: IngestRow[] = []
        for (const r of byId) {
          const id = ids.get(r.origin_id)
          if (id === undefined) others.push(r)
          else stored.push({ ...r.record, id })
        }
        await applyRollups(tx, stored)
        const clashes: IngestRow[] = []
        if (others.length > 0) {
          const before = await tx.all<{ origin_id: number; ts: number; model: string; cost_usd: number }>(PG_STORED_SQL, {
            member,
            ids: others.map((r) => r.origin_id),
          })
          const at = new Map(before.map((b) => [b.origin_id, b]))
          for (const r of others) {
            const b = at.get(r.origin_id)
            if (b && (b.ts !== r.record.ts || b.model !== r.record.model || b.cost_usd !== r.record.cost_usd)) clashes.push(r)
          }
        }
        clashes.sort((a, b) => a.index - b.index)
        return { stored, clashes }
      })
    } catch (err) {
      const code = (err as { code?: unknown } | null)?.code
      if (attempt >= MAX_TX_ATTEMPTS || (code !== '40001' && code !== '40P01')) throw err
    }
  }
}
