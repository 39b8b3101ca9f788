import type Database from 'better-sqlite3'
import type { IngestCall } from '../../shared/api'
import { CALL_COLUMNS, type CallRow, toCall } from '../dashboard/calls'

export interface Batch {
  calls: IngestCall[]
  /** The id of the last call read (the cursor moves there once the team server answers). */
  lastId: number
}

/**
 * Reads this Burnrate's calls after a cursor, oldest first, as the ingest body carries them:
 * the contract's call fields plus the key hint, endpoint and error the ledger holds. Never a key
 * (the ledger holds only its hash and hint) and never a body (the ledger holds none). Calls
 * this Burnrate ingested itself (a team server reporting further) are not sent on.
 */
export class Batcher {
  private readonly select: Database.Statement
  private readonly count: Database.Statement

  constructor(db: Database.Database) {
    this.select = db.prepare(
      `SELECT ${CALL_COLUMNS}, key_hint, endpoint, error FROM calls WHERE id > ? AND origin_id IS NULL ORDER BY id LIMIT ?`,
    )
    this.count = db.prepare('SELECT count(*) FROM calls WHERE id > ? AND origin_id IS NULL').pluck()
  }

  next(after: number, size: number): Batch {
    const rows = this.select.all(after, size) as (CallRow & { key_hint: string; endpoint: string; error: string | null })[]
    return {
      calls: rows.map((r) => ({ ...toCall(r), key_hint: r.key_hint, endpoint: r.endpoint, error: r.error })),
      lastId: rows.length ? rows[rows.length - 1].id : after,
    }
  }

  /** Calls written after the cursor (not yet acknowledged). */
  backlog(after: number): number {
    return this.count.get(after) as number
  }
}
