import type { SqlStore } from '../storage/sql'
import { listenersPerOwner } from './listeners'

/**
 * Revisions of recorded calls. A call whose cost or tokens change after it was recorded (re-priced,
 * or a background response given its real usage: ../pricing/moves.ts) gets a new `calls.revision`,
 * one number per transaction, above every earlier one; the team sender sends such calls again, in
 * revision order, so the team server replaces what it holds (../team/sender.ts). Only the SQLite
 * ledger numbers them: a Burnrate on PostgreSQL sends nothing to a team server.
 */
export async function markRevised(tx: SqlStore, ids: readonly number[]): Promise<void> {
  if (ids.length === 0 || tx.dialect !== 'sqlite') return
  const last = (await tx.get<{ r: number | null }>('SELECT MAX(revision) AS r FROM calls'))?.r ?? 0
  await tx.run('UPDATE calls SET revision = @rev WHERE id IN (SELECT value FROM json_each(@ids))', { rev: last + 1, ids: JSON.stringify(ids) })
}

const revisions = listenersPerOwner<void>()

/** Runs `fn` after calls of `ledger` were revised (committed); returns the unsubscribe. */
export function onRevised(ledger: object, fn: () => void): () => void {
  return revisions.on(ledger, fn)
}

/** Tells the listeners of `ledger` that calls were revised. */
export function revised(ledger: object): void {
  revisions.emit(ledger, undefined)
}
