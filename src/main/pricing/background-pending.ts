import type Database from 'better-sqlite3'
import type { BackgroundDone } from './background'

/** A background response's real usage waiting to be recorded, as kept in the data folder's file. */
export interface PendingSettlement {
  done: BackgroundDone
  /** Attempts made so far. */
  attempts: number
  /** When the first attempt failed (ms). */
  firstAt: number
  /** When to try next (ms). */
  nextAt: number
}

/**
 * The background responses whose real usage could not be recorded yet (the database away, the
 * creating call not stored), kept in this machine's SQLite file (`background_pending`, ledger
 * migration 19) so that a restart tries them again instead of leaving their calls estimated. The
 * usage and ids only: no key, no body. Written only when an attempt fails (never on a call's path).
 */
export class PendingSettlements {
  private readonly saveStmt: Database.Statement
  private readonly removeStmt: Database.Statement
  private readonly allStmt: Database.Statement

  constructor(db: Database.Database) {
    this.saveStmt = db.prepare(
      `INSERT INTO background_pending (provider, response_id, done, attempts, first_at, next_at) VALUES (@provider, @rid, @done, @attempts, @firstAt, @nextAt)
         ON CONFLICT (provider, response_id) DO UPDATE SET done = excluded.done, attempts = excluded.attempts, next_at = excluded.next_at`,
    )
    this.removeStmt = db.prepare('DELETE FROM background_pending WHERE provider = ? AND response_id = ?')
    this.allStmt = db.prepare('SELECT done, attempts, first_at, next_at FROM background_pending ORDER BY next_at')
  }

  save(p: PendingSettlement): void {
    this.saveStmt.run({ provider: p.done.provider, rid: p.done.responseId, done: JSON.stringify(p.done), attempts: p.attempts, firstAt: p.firstAt, nextAt: p.nextAt })
  }

  remove(done: BackgroundDone): void {
    this.removeStmt.run(done.provider, done.responseId)
  }

  /** Every kept settlement (a row that cannot be read is left out). */
  all(): PendingSettlement[] {
    const out: PendingSettlement[] = []
    for (const r of this.allStmt.all() as { done: string; attempts: number; first_at: number; next_at: number }[]) {
      try {
        out.push({ done: JSON.parse(r.done) as BackgroundDone, attempts: r.attempts, firstAt: r.first_at, nextAt: r.next_at })
      } catch {
        // unreadable: nothing to try
      }
    }
    return out
  }
}
