import type { Logger } from '../log'

export interface LedgerOptions {
  /** Longest wait before a recorded call is written (ms). */
  flushIntervalMs: number
  /** Calls held in memory while the database cannot be written. */
  maxPending: number
  timezone: string
  /**
   * The built write thread (out/main/ledger-worker.js). When given, batches due on the timer are
   * written on that thread while the database is writable; `flush()` still writes (and waits) on
   * the caller's thread, and every failure is handled there as without it. The thread starts
   * with the first batch (an idle server holds no thread) and ends once it has had nothing to
   * do for `threadIdleMs`; the next batch starts it again.
   */
  writeThread?: URL | string
  /** How long the write thread may sit idle before it ends (default 30 s). */
  threadIdleMs?: number
  /** The data folder: while the database cannot be written, the calls waiting are journalled there (./journal.ts). */
  journalDir?: string
  log?: Logger
}

/** Longest wait for the write thread's answer to the batch it is writing, before it is given up. */
export const LAND_WAIT_MS = 10_000
