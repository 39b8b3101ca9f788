import type { SqlStore } from '../storage/sql'
import type { CallRecord } from './record'
import type { SpendTracker } from './spend'

export interface LedgerStatus {
  /** False while writes are failing (locked, full or read-only database; PostgreSQL unreachable). */
  writable: boolean
  pending: number
  /** Calls dropped and never recorded: past `maxPending` while the database stayed unwritable and not kept on disk (the spill journal could not take them), or a row the database refused. */
  dropped: number
  /** Of `dropped`, the calls let go because more than `maxPending` waited (the oldest first). */
  overflowed?: number
  /**
   * Calls that left memory because more than `maxPending` waited, but are on disk in the spill
   * journal, and are not stored yet: not lost, and not in `dropped` (SQLite: stored at the next
   * start; PostgreSQL: read back once it answers again, when they leave this count, or at the next start).
   */
  left_on_disk?: number
  /**
   * Every call counted in `left_on_disk` since the start, stored since or not (the metrics' counter,
   * never down): one held by an append under way when it left memory once that append has put it on disk.
   */
  left_on_disk_total?: number
  /** Why the calls dropped last (other than `overflowed`) were dropped, for the log (../reliability/ledger-log.ts). */
  last_drop?: string
  last_error: string | null
}

/** Hooks the SQLite write thread can run itself (the batch goes there only if every hook is one of these). */
export type ThreadHook = 'rollups'

/** A stored call with the id its store gave it. */
export type StoredCall = CallRecord & { id: number }

/** Runs inside a batch's PostgreSQL transaction, after its rows are inserted (rollups kept in step). */
export type BatchTxHook = (tx: SqlStore, rows: readonly StoredCall[]) => Promise<void>

/**
 * The write side of the ledger, as the proxy, the features and the server see it. Two
 * implementations: `Ledger` (the data folder's SQLite file, written synchronously in batches)
 * and `PgLedger` (PostgreSQL, written asynchronously in batches, spilled to disk while away).
 */
export interface CallLedger {
  readonly kind: 'sqlite' | 'postgres'
  /** Today's and this month's spend in memory, in step with `record()`. */
  readonly spend: SpendTracker
  readonly status: LedgerStatus
  /**
   * SQLite: counts at once the calls (and moves) other processes noticed in the file so far
   * (`burnrate import` beside this server, ./notices.ts), in the spend and every other reader.
   * Before a stored call's cost moves here (a supersede, a re-price): a call stored before the
   * move is counted before it, not after (its money was taken off a spend that never held it).
   */
  catchUp?(): void
  /** Takes a finished call: counts its spend at once and queues its row. Never waits. */
  record(call: CallRecord): void
  /**
   * Starts writing every queued call now. SQLite: written when this returns (false when the
   * database refused). PostgreSQL: under way (false while the database is known to be away);
   * await `flushed()` to know the rows are stored.
   */
  flush(): boolean
  /** Writes every queued call and resolves once they are stored (false when the store refused). */
  flushed(): Promise<boolean>
  /** Called for every recorded call, as soon as it is recorded (before it is stored). */
  onCall(listener: (call: CallRecord) => void): () => void
  /**
   * SQLite only: runs `hook` synchronously inside every batch's write transaction. A
   * PostgreSQL ledger runs `onBatchTx` hooks instead and ignores these (local SQLite rollups
   * have no rows to follow there).
   */
  onBatch(hook: (rows: readonly CallRecord[]) => void, onThread?: ThreadHook): void
  /** PostgreSQL only: runs `hook` inside every batch's transaction with the rows it inserted (a SQLite ledger never calls it). */
  onBatchTx(hook: BatchTxHook): void
  /** True while SQLite batches due on the timer go to the write thread (always false for PostgreSQL). */
  readonly writesOnThread: boolean
  /** Hands over every queued call and forgets it. */
  takePending(): CallRecord[]
  /**
   * PostgreSQL: the calls recorded and not yet stored (a write under way or failed), oldest first,
   * at most `ledger.max_pending`: a read of the shared meters counts again those its snapshot misses
   * (../budgets/shared.ts). SQLite has none: its meters are not rebuilt from another store.
   */
  queuedCalls?(): readonly CallRecord[]
  /**
   * Deletes up to `limit` of the oldest calls that arrived before `before` (ms) and resolves to
   * how many it deleted (`ledger.retention_days`); the rollups keep their totals. `team`: on a
   * member, the team server's address; the calls it has not acknowledged are kept.
   */
  prune(before: number, limit: number, team?: string | null): Promise<number>
  /** Whether the last `prune` step stopped before it looked at every old call (../retention.ts, `Pruned.more`). */
  readonly pruneUnfinished?: boolean
  /** Writes (or, PostgreSQL away, spills to disk) what is queued and stops accepting calls. */
  close(): boolean | Promise<boolean>
  /** PostgreSQL only: for an exit that cannot wait, keeps what is queued in the spill journal for the next start, and stops. */
  keepQueued?(): Promise<void>
}
