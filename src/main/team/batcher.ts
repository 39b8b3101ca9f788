import type Database from 'better-sqlite3'
import type { IngestCall } from '../../shared/api'
import { CALL_COLUMNS, type CallRow, toCall } from '../dashboard/calls'
import { asStored } from './validate'

export interface Batch {
  /** This Burnrate's own calls among those read (may be none: every one read was ingested). */
  calls: IngestCall[]
  /** The id of the last call read, ingested or not (the cursor moves there once the team server answers). */
  lastId: number
  /** As many calls were read as asked for: more may follow. */
  more: boolean
}

/** A batch of revised calls: the cursor moves to its last (revision, id) once the team server answers. */
export interface RevisedBatch {
  /** This Burnrate's own calls sent before among those read (may be none). */
  calls: IngestCall[]
  /** The (revision, id) of the last call read, whether it goes or not. */
  last: { revision: number; id: number }
  /** As many calls were read as asked for: more may follow. */
  more: boolean
}

type Row = CallRow & { key_hint: string; endpoint: string; error: string | null; revision: number | null; origin_id: number | null; superseded_by: number | null }

/**
 * A call as sent: with its revision only when it is sent again (`revised`); first sent, it is new
 * to the team server. Its text as the team server stores it (./validate.ts asStored): the ledger
 * keeps an answer id as the provider sent it and an imported call's names as its agent logged
 * them, of any length, which a team server refused over 1,000 characters (the call skipped, its
 * money never counted there).
 */
function toIngest(r: Row, withRevision = false): IngestCall {
  const c: IngestCall = { ...toCall(r), key_hint: r.key_hint, endpoint: r.endpoint, error: r.error }
  if (withRevision && r.revision !== null) c.revision = r.revision
  // An imported call the proxy's record superseded: no request on the team server either (its id of that record).
  if (r.superseded_by !== null) c.superseded_by = r.superseded_by
  return asStored(c)
}

/**
 * Reads this Burnrate's calls after a cursor, oldest first, as the ingest body carries them:
 * the contract's call fields plus the key hint, endpoint and error the ledger holds. Never a key
 * (the ledger holds only its hash and hint) and never a body (the ledger holds none). Calls
 * this Burnrate ingested itself (a team server reporting further) are not sent on, but are read and
 * passed (the cursor moves past them), so they are never read again: skipping them in SQL instead
 * read every ingested call after this Burnrate's last own one again at each send. A call sent
 * already whose cost or tokens changed since (../ledger/revisions.ts) is read again, in revision
 * order, with its revision. The revised calls read that do not go (ingested ones, which hold their
 * sender's revision, and own calls not sent yet, which go as they are now) are passed too.
 */
export class Batcher {
  private readonly select: Database.Statement
  private readonly selectRevised: Database.Statement
  private readonly maxRevision: Database.Statement

  constructor(db: Database.Database) {
    const cols = `${CALL_COLUMNS}, key_hint, endpoint, error, revision, superseded_by`
    this.select = db.prepare(`SELECT ${cols}, origin_id FROM calls WHERE id > ? ORDER BY id LIMIT ?`)
    // Revised after the cursor (revision, id); of them, the own calls already sent (id <= sent) go: ./backlog.ts counts them alike.
    const revised = 'revision IS NOT NULL AND (revision > @rev OR (revision = @rev AND id > @id))'
    this.selectRevised = db.prepare(`SELECT ${cols}, origin_id FROM calls WHERE ${revised} ORDER BY revision, id LIMIT @size`)
    this.maxRevision = db.prepare('SELECT COALESCE(MAX(revision), 0) FROM calls').pluck()
  }

  next(after: number, size: number): Batch {
    const rows = this.select.all(after, size) as Row[]
    const calls: IngestCall[] = []
    for (const r of rows) if (r.origin_id === null) calls.push(toIngest(r))
    return { calls, lastId: rows.length ? rows[rows.length - 1].id : after, more: rows.length === size }
  }

  /** Calls up to `sent` revised after `from`, in revision order. */
  revised(from: { revision: number; id: number }, sent: number, size: number): RevisedBatch {
    const rows = this.selectRevised.all({ rev: from.revision, id: from.id, size }) as Row[]
    const last = rows.length ? { revision: rows[rows.length - 1].revision!, id: rows[rows.length - 1].id } : from
    const calls: IngestCall[] = []
    for (const r of rows) if (r.origin_id === null && r.id <= sent) calls.push(toIngest(r, true))
    return { calls, last, more: rows.length === size }
  }

  /** The newest revision in the ledger (a new team server starts after it: it is sent every call as it is now). */
  latestRevision(): number {
    return this.maxRevision.get() as number
  }
}
