import type Database from 'better-sqlite3'
import { INSERT_KEY_PATTERN_SQL, type KeyPattern, type SideWrite } from '../ledger/side-writes'
import { Ledger } from '../ledger/ledger'
import type { CallLedger } from '../ledger/types'
import { QueuedWriter } from './queued-writer'

export type { KeyPattern } from '../ledger/side-writes'

/**
 * The prefix rule patterns each API key (by hash) was seen to match, kept in this machine's SQLite
 * file (`key_patterns`, ledger migration 22; on PostgreSQL too, as the other instances tell theirs
 * through the calls feed). The raw key is never stored, so after a restart this is how a key known
 * only by hash is found under its prefix rules (budget listing, alerts, tray, metrics).
 *
 * Never written on a call's way (the proxy's hot path does no disk I/O): on SQLite the ledger
 * writes them in the transaction of its next batch of calls, on its write thread when it has one,
 * so a call on disk has its key's patterns on disk too. On PostgreSQL the ledger's batches go to
 * the database: they are written here inside each batch's transaction, before it commits (a call
 * stored there has them on this machine's disk), and a moment after they are learnt, off the
 * call's turn: only at a batch, they waited in memory while PostgreSQL was away, and an instance
 * killed outright then (SIGKILL, an OOM kill) lost them (a key known only by hash was listed under
 * no rule after its restart). And at close.
 */
export class KeyPatternStore {
  private readonly selectAll: Database.Statement
  private readonly sweepStmt: Database.Statement
  /** Patterns learnt and not written yet (PostgreSQL), in order. */
  private readonly writes: QueuedWriter<KeyPattern>

  constructor(
    db: Database.Database,
    private readonly ledger: CallLedger,
  ) {
    const insert = db.prepare(INSERT_KEY_PATTERN_SQL)
    this.selectAll = db.prepare('SELECT api_key_hash, pattern FROM key_patterns')
    this.sweepStmt = db.prepare('DELETE FROM key_patterns WHERE pattern NOT IN (SELECT value FROM json_each(?))')
    this.writes = new QueuedWriter(db.transaction((rows: readonly KeyPattern[]) => {
      for (const r of rows) insert.run(r)
    }))
    if (!(ledger instanceof Ledger)) ledger.onBatchTx(async () => this.flush())
  }

  all(): KeyPattern[] {
    return this.selectAll.all() as KeyPattern[]
  }

  /**
   * Deletes the rows of patterns no rule has any more (a rule deleted, or gone from the config),
   * when the rules change: outside any call, as the rule's own row is. A row of a pattern learnt
   * just before (still queued with the ledger's batch) is swept at the next change or start.
   */
  sweep(patterns: readonly string[]): void {
    try {
      this.sweepStmt.run(JSON.stringify(patterns))
    } catch {
      // busy now: the rows only cost space, and go at the next change or start
    }
  }

  /** Keeps patterns a key was just seen to match (with the ledger's next batch). */
  add = (hash: string, patterns: readonly string[]): void => {
    const rows = patterns.map((pattern) => ({ api_key_hash: hash, pattern }))
    if (this.ledger instanceof Ledger) this.ledger.keepWithNextBatch(rows.map((r) => ({ pattern: r })))
    else {
      this.writes.add(rows)
      this.writes.soon(0)
    }
  }

  /** Writes what is pending (PostgreSQL); kept for the next try when the file cannot be written now. */
  flush(): void {
    this.writes.flush()
  }

  /** Hands over the rows the file has not taken (PostgreSQL; at a stop: ./unwritten-rows.ts), and forgets them. */
  takePending(): SideWrite[] {
    return this.writes.take().map((pattern) => ({ pattern }))
  }

  /** Stops writing on its own (the server's close, after its last `flush`). */
  close(): void {
    this.writes.close()
  }
}
