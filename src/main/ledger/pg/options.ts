import type { Logger } from '../../log'
import type { SqlStore } from '../../storage/sql'

export interface PgLedgerOptions {
  /** Longest wait before a recorded call is written (ms). */
  flushIntervalMs: number
  /** Calls held in memory while PostgreSQL is away (they are on disk too). */
  maxPending: number
  timezone: string
  /** Where spill files are written and found (the data folder). */
  dataDir: string
  log?: Logger
  /** Rows per INSERT (default 1000). */
  batchRows?: number
  /** Kept out of every error text (the URL's password). */
  secret?: string
  /** Runs before the first write (default: migratePostgres). */
  migrate?: (store: SqlStore) => Promise<unknown>
  /** Longest a stop waits for a write under way before spilling its calls instead (default 10 s). */
  closeWaitMs?: number
  /** Longest a stop (or a second signal's exit) waits for the spill file to take what is still queued with no byte reaching it (default 10 s): a disk that never answers must not hold it up for good; a slow one that works is waited for. */
  keepWaitMs?: number
  /** A write that has not answered for this long counts as PostgreSQL being away: spilling starts (default 10 s). */
  stallMs?: number
}

/** The PostgreSQL side of `/api/health` (never the URL's password). */
export interface PgStorageStatus {
  /** The last attempt reached PostgreSQL. */
  reachable: boolean
  /** Schema migrated, earlier spill files written and spend loaded: calls are being written. */
  ready: boolean
  /** Calls this instance has put in its spill file since PostgreSQL went away and not yet written. */
  spilled: number
  /** Spill files in the data folder still holding something to write: calls for PostgreSQL, or side rows this instance's own SQLite file could not take at start-up (the next start writes them). */
  spill_files: number
  last_error: string | null
}

/** An error's text for status and logs: its code and message, never `secret` (the URL's password). */
export function describeError(err: unknown, secret: string | undefined): string {
  const e = err as { code?: string; message?: string }
  let text = e?.code ? `${e.code}: ${e.message}` : String(e?.message ?? err)
  if (secret) text = text.split(secret).join('***')
  return text
}
