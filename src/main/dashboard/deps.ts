import type { SqlReader } from '../storage/sql'

/** What every dashboard query needs. */
export interface DashDeps {
  /** The ledger's store: SQLite, or PostgreSQL with `storage.url`. */
  q: SqlReader
  /** IANA zone in which today and this month begin. */
  tz: string
}

/** Calls a session's last call must be newer than to count as active. */
export const ACTIVE_MS = 5 * 60_000
