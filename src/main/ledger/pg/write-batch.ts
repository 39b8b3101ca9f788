import { sanitizeRecord } from '../../reliability/rows'
import type { SqlStore } from '../../storage/sql'
import type { CallRecord } from '../record'
import type { BatchTxHook } from '../types'
import { insertCalls, isRowProblem, pgSafe } from './insert'

const MAX_TX_ATTEMPTS = 5

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

async function insertBatch(store: SqlStore, hooks: readonly BatchTxHook[], rows: readonly CallRecord[]): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await store.transaction(async (tx) => {
        const stored = await insertCalls(tx, rows)
        for (const hook of hooks) await hook(tx, stored)
      })
    } catch (err) {
      // Another instance's batch won a lock (deadlock, serialization failure): the transaction
      // was rolled back whole, and the same batch goes again at once; PostgreSQL is not away.
      if (attempt >= MAX_TX_ATTEMPTS || !isTransient(err)) throw err
    }
  }
}

/** serialization_failure, deadlock_detected: a transaction to run again, not a database away. */
function isTransient(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return code === '40001' || code === '40P01'
}
