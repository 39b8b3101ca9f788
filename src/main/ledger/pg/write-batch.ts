import { sanitizeRecord } from '../../reliability/rows'
import { retryOnConflict } from '../../storage/conflict'
import type { SqlStore } from '../../storage/sql'
import type { CallRecord } from '../record'
import type { BatchTxHook } from '../types'
import { insertCalls, isRowProblem, pgSafe } from './insert'

/**
 * One batch in one transaction (its rows inserted, then the batch hooks); a row PostgreSQL
 * refuses for itself does not hold back the others: the batch is written row by row, a refused
 * row once more cleaned (`pgSafe`), and then handed to `dropped`. An error that says the database
 * is away is thrown (the rows stay queued).
 */
export async function writeBatch(
  store: SqlStore,
  hooks: readonly BatchTxHook[],
  rows: CallRecord[],
  dropped: (err: unknown) => void,
): Promise<void> {
  try {
    await insertBatch(store, hooks, rows)
  } catch (err) {
    if (!isRowProblem(err)) throw err
    for (const row of rows) {
      try {
        await insertBatch(store, hooks, [row])
      } catch (e) {
        if (!isRowProblem(e)) throw e
        try {
          await insertBatch(store, hooks, [pgSafe(sanitizeRecord(row))])
        } catch (again) {
          if (!isRowProblem(again)) throw again
          dropped(again)
        }
      }
    }
  }
}

/**
 * Another instance's batch can win a lock (deadlock, serialization failure): the transaction was
 * rolled back whole, and the same batch goes again at once; PostgreSQL is not away.
 */
function insertBatch(store: SqlStore, hooks: readonly BatchTxHook[], rows: readonly CallRecord[]): Promise<void> {
  return retryOnConflict(() =>
    store.transaction(async (tx) => {
      const stored = await insertCalls(tx, rows)
      for (const hook of hooks) await hook(tx, stored)
    }),
  )
}
