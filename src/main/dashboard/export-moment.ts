import { PostgresStore } from '../storage/postgres'
import type { SqlReader } from '../storage/sql'
import type { ExportAsOf } from './export-query'

/**
 * Runs `read` (an export: every page, offset and count it reads) on the ledger as it stands now,
 * the moment taken before `read` writes its first byte, so nothing committed while it streams is
 * in it. SQLite: the ledger's last id now (ids only grow), which every read is bounded by (the
 * reads stay short and no transaction is held between pages, so the server keeps writing and
 * checkpointing). PostgreSQL: one REPEATABLE READ, READ ONLY transaction on one connection, held
 * for the whole export as pg_dump does (PostgresStore.readSnapshot); ids come from a sequence
 * there and instances commit out of id order, so no id bound would be a moment's state. Its
 * connection goes back to the pool however `read` ends (done, client gone, client stalled past
 * `dashboard.export_stall_ms`: ./export-stall.ts, error); at most
 * `snapshotLimit` exports hold one at once, past that SnapshotsBusy is thrown before `read` runs.
 */
export async function atExportMoment<T>(q: SqlReader, read: (q: SqlReader, asOf: ExportAsOf) => Promise<T>): Promise<T> {
  if (q instanceof PostgresStore) return q.readSnapshot((tx) => read(tx, null))
  if (q.dialect !== 'sqlite') throw new Error('an export on PostgreSQL reads through the store itself (its own snapshot transaction)')
  return read(q, { maxId: (await q.get<{ m: number | null }>('SELECT max(id) AS m FROM calls'))?.m ?? 0 })
}
