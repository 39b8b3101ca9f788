import type Database from 'better-sqlite3'

/** Unsent calls counted one by one per health answer (about 1 ms); beyond, an upper bound. */
export const BACKLOG_EXACT = 10_000
/** Revised calls counted one by one (each a look-up in the table: about 3 ms); beyond, an upper bound. */
export const BACKLOG_EXACT_REVISED = 1_000
/** Entries of the revision index counted for that bound (about 2 ms); beyond, a coarser one. */
export const BACKLOG_REVISION_INDEX = 50_000

export interface BacklogLimits {
  exact: number
  exactRevised: number
  revisionIndex: number
}

const LIMITS: BacklogLimits = { exact: BACKLOG_EXACT, exactRevised: BACKLOG_EXACT_REVISED, revisionIndex: BACKLOG_REVISION_INDEX }

/**
 * How many calls the team server has not acknowledged (`team.backlog` in /api/health): asked on
 * the proxy's event loop at every health answer, so it reads a bounded number of rows however
 * many are unsent (a new team.url on a ledger of millions). Exact while small; beyond, an upper
 * bound that is exact on a member whose ledger has no gaps (README: Reporting to a team server).
 * Each query reads at most its limit of rows, matching or not (calls ingested as a team server,
 * `origin_id` set, are read and not counted, so they cannot make a scan long either):
 *
 * - calls after the cursor: the first `exact` rows are read and this Burnrate's own counted; the
 *   rest are bounded by the span of ids from the last row read to the newest call (ids are the
 *   table's rowid: each new call takes the largest plus one). Ingested or pruned calls are in it.
 * - sent calls revised after the revision cursor: the first `exactRevised` entries of the revision
 *   index are read and the calls counted as ./batcher.ts reads them; beyond, the first
 *   `revisionIndex` entries up to the cursor, ingested calls included (they hold their sender's
 *   revision); beyond those too, the id of the last call sent (no more calls can be up to it).
 */
export class Backlog {
  private readonly unsent: Database.Statement
  private readonly maxId: Database.Statement
  private readonly revised: Database.Statement
  private readonly revisedEntries: Database.Statement

  constructor(
    db: Database.Database,
    private readonly limits: BacklogLimits = LIMITS,
  ) {
    this.unsent = db.prepare(
      'SELECT count(*) AS seen, coalesce(sum(origin_id IS NULL), 0) AS n, max(id) AS last FROM (SELECT id, origin_id FROM calls WHERE id > ? ORDER BY id LIMIT ?)',
    )
    this.maxId = db.prepare('SELECT max(id) FROM calls').pluck()
    // The revision index's entries after the cursor (revision, id), in its order (calls_revision: covering).
    const entries = 'SELECT id FROM calls WHERE revision IS NOT NULL AND (revision > @rev OR (revision = @rev AND id > @id)) ORDER BY revision, id LIMIT @limit'
    // Among them the calls already sent (id <= sent) and this Burnrate's own: as ./batcher.ts reads them.
    this.revised = db.prepare(
      `SELECT count(*) AS seen, coalesce(sum(c.id <= @sent AND c.origin_id IS NULL), 0) AS n FROM (${entries}) e JOIN calls c ON c.id = e.id`,
    )
    this.revisedEntries = db.prepare(`SELECT count(*) AS seen, coalesce(sum(id <= @sent), 0) AS n FROM (${entries})`)
  }

  /** Calls after `sent` (the cursor), and calls up to it revised after `from` (the revision cursor). */
  count(sent: number, from: { revision: number; id: number }): number {
    return this.countUnsent(sent) + this.countRevised(sent, from)
  }

  private countUnsent(sent: number): number {
    const { seen, n, last } = this.unsent.get(sent, this.limits.exact) as { seen: number; n: number; last: number | null }
    if (seen < this.limits.exact || last === null) return n
    return n + ((this.maxId.get() as number) - last)
  }

  private countRevised(sent: number, from: { revision: number; id: number }): number {
    const p = { rev: from.revision, id: from.id, sent }
    const exact = this.revised.get({ ...p, limit: this.limits.exactRevised }) as { seen: number; n: number }
    if (exact.seen < this.limits.exactRevised) return exact.n
    const entries = this.revisedEntries.get({ ...p, limit: this.limits.revisionIndex }) as { seen: number; n: number }
    return entries.seen < this.limits.revisionIndex ? entries.n : sent
  }
}
