import { SESSION_MEMORY_MS } from '../../budgets/meter'
import type { SqlStore } from '../../storage/sql'
import { COUNT_PRUNED, GONE_COLUMNS, type Gone, KEEPS_LIVE_SESSIONS, KEEPS_MEMBERS_LAST, PRUNE_SCAN, type Pruned, PrunedRequests } from '../retention'

interface Cursor {
  id: number
  ts: number
}

// The next old calls after the cursor (ts, then id), read from calls_ts: those at the cursor's ts
// after its id (a batch's results can share one instant), then later ones.
const SAME_TS = 'SELECT id, ts FROM calls WHERE ts = @ts AND id > @id AND ts < @before ORDER BY id LIMIT @n'
const LATER_TS = 'SELECT id, ts FROM calls WHERE ts > @ts AND ts < @before ORDER BY ts, id LIMIT @n'
const OLDEST = 'SELECT id, ts FROM calls WHERE ts < @before ORDER BY ts, id LIMIT @n'
const REMOVE = `DELETE FROM calls WHERE id IN (
  SELECT c.id FROM calls c WHERE c.id = ANY(@ids::bigint[]) AND ${KEEPS_MEMBERS_LAST} AND ${KEEPS_LIVE_SESSIONS})
  RETURNING ${GONE_COLUMNS}`
// The import's claims of the calls deleted (../../import/write-postgres.ts): none names a call still there.
const UNCLAIM = 'DELETE FROM import_claims k WHERE k.call_id = ANY(@ids::bigint[]) AND NOT EXISTS (SELECT 1 FROM calls c WHERE c.id = k.call_id)'

/**
 * Retention steps on PostgreSQL, bounded as SQLite's (../retention.ts, `pruneStepOn`): a step
 * deletes at most `limit` calls and looks at no more than PRUNE_SCAN old ones, in windows from
 * where this instance's last step stopped, so the old calls kept (a session still in use, each
 * member's last call) are not read through at every step, and the retention row (which team
 * ingest, imports and batch results take a share lock of) is held for a bounded step. Once a pass
 * reaches `before` the next starts again from the oldest, so a call kept once is deleted at the
 * next pass. The rollups keep their totals: every stored call is already in them (written in its
 * batch's transaction), and a call is deleted once whichever instance's step deletes it; the step
 * adds the requests it deleted to their sessions' rows (`pruned_requests`, as on SQLite).
 */
export class PgPruner {
  /** The last old call the last step looked at (null: the next pass starts from the oldest). */
  private cursor: Cursor | null = null
  /** Whether the last step stopped before it looked at every old call. */
  more = false

  constructor(private readonly store: SqlStore) {}

  async step(before: number, limit: number): Promise<number> {
    const r = await this.store.transaction(async (tx) => {
      // Locked first: a team ingest reads the time pruned before under a share lock of this row
      // (../../team/store.ts), so it sees the calls or this step's time, never neither. Steps of
      // other instances on the database wait here, one step at a time.
      await tx.run('SELECT 1 FROM retention_state WHERE id = 1 FOR UPDATE')
      const r = await this.walk(tx, before, limit)
      // With the time pruned before, in the same transaction: an import then knows a log entry that
      // old may repeat a proxied call that is gone, and does not count it again (../../import/importer.ts).
      if (r.deleted > 0) await tx.run('UPDATE retention_state SET pruned_before = GREATEST(pruned_before, @before) WHERE id = 1', { before })
      return r
    })
    this.cursor = r.cursor
    this.more = r.more
    return r.deleted
  }

  private async walk(tx: SqlStore, before: number, limit: number): Promise<Pruned & { cursor: Cursor | null }> {
    const active = Date.now() - SESSION_MEMORY_MS
    let at = this.cursor
    // A step that starts where the last one stopped goes round once more from the oldest.
    let wrapped = at === null
    // Whether this step reached the end of the old calls: its pass is over (see ../retention.ts).
    let ended = false
    let scanned = 0
    let deleted = 0
    const gone = new PrunedRequests()
    while (deleted < limit && scanned < PRUNE_SCAN) {
      const n = Math.min(limit - deleted, PRUNE_SCAN - scanned)
      const rows = await window(tx, before, at, n)
      if (rows.length > 0) {
        const ids = rows.map((r) => r.id)
        const removed = await tx.all<Gone>(REMOVE, { ids, active })
        if (removed.length > 0) await tx.run(UNCLAIM, { ids })
        gone.add(removed)
        deleted += removed.length
        scanned += rows.length
        at = rows[rows.length - 1]
      }
      if (rows.length < n) {
        at = null
        ended = true
        if (wrapped) break
        wrapped = true
      }
    }
    // Each session's pruned requests, on its rollup row (../retention.ts, COUNT_PRUNED).
    for (const p of gone.sessions()) await tx.run(COUNT_PRUNED, p)
    return { deleted, more: at !== null && !ended, cursor: at }
  }
}

async function window(tx: SqlStore, before: number, at: Cursor | null, n: number): Promise<Cursor[]> {
  if (at === null) return tx.all<Cursor>(OLDEST, { before, n })
  const rows = await tx.all<Cursor>(SAME_TS, { ts: at.ts, id: at.id, before, n })
  return rows.length < n ? rows.concat(await tx.all<Cursor>(LATER_TS, { ts: at.ts, before, n: n - rows.length })) : rows
}
