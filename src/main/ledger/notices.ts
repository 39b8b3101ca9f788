import type Database from 'better-sqlite3'
import type { CostAdjustment, KeyLatest } from '../budgets/types'
import { CALL_COLUMNS } from './columns'
import type { CallRecord } from './record'

/**
 * Calls another process stored in this SQLite file while a server runs on it (`burnrate import`
 * beside the desktop app): the server counts them in its spend and budget meters within
 * seconds, not at its next restart or rule change. The writer adds a row to `call_notices`
 * (ledger migration 20) in the transaction that stores each call; the server reads the new rows
 * every `intervalMs` and deletes what every reader has counted.
 *
 * An imported call whose log entry grew (./import/grown.ts) has a notice of its move too, written
 * in the transaction that moves it, with the difference in cost: the readers move by it. One the
 * proxy's record superseded there has a notice of minus its cost and of one request less
 * (`requests`, whatever it cost): no longer a request of its key in the readers either, whose
 * last-seen time and tenant become those of the key's newest call left (read with the notice). A new
 * call's notice keeps the cost it was stored with, which is what a reader counts, so a call
 * imported and then grown before a reader reads either notice counts once, grown. One stored as
 * money and re-classed since as a plan's (../import/grown.ts) has a notice of minus its cost under
 * the provider it was counted by (`was_provider`): its money leaves the readers' spend, and the
 * notices before it are read as the call was then (that provider, money), so it counts once
 * whether a reader read them before the re-class or reads them all at once after it. A server's
 * own log watcher re-classing such a call leaves that notice too, at $0 (it moves its readers'
 * spend itself, once it has read the notices before it), so a `burnrate import`'s notice of the
 * call not read yet is still read as money.
 *
 * Each reader (the spend tracker, the budget meters) loaded the ledger at some moment and holds
 * every call and move whose notice was written before it (`through`, read in the same read
 * transaction as the load: `readWithNotices`); it is given only those after that, so none counts
 * twice. A PostgreSQL ledger needs none of this: its calls feed (budgets/feed/) does the same.
 */
export interface NoticeReader {
  /** The last notice whose call this reader already counts. */
  through: number
  take(calls: readonly CallRecord[]): void
  /** Calls stored before whose cost moved (money only: a plan's calls are not among them). */
  moved?(changes: readonly CostAdjustment[]): void
}

const COLUMNS = CALL_COLUMNS.map((c) => `c.${c}`).join(', ')
const BATCH = 500
/** Notices read in one turn of the event loop at most (a big import is counted over several, between calls). */
export const NOTICES_PER_TURN = 2000

/** The newest notice in `db` (0 when none; also when the table is missing, on a file not yet migrated). */
export function latestNotice(db: Database.Database): number {
  try {
    return (db.prepare('SELECT COALESCE(MAX(seq), 0) FROM call_notices').pluck().get() as number) ?? 0
  } catch {
    return 0
  }
}

/** Runs `read` and reads the newest notice in one read transaction: what `read` saw holds every call noticed up to `through`. */
export function readWithNotices<T>(db: Database.Database, read: () => T): { value: T; through: number } {
  if (db.inTransaction) return { value: read(), through: latestNotice(db) }
  return db.transaction(() => {
    const value = read()
    return { value, through: latestNotice(db) }
  }).deferred()
}

/**
 * Writes notices (`burnrate import`), inside the caller's transaction: of a call stored with `cost`,
 * and of a stored call's cost moved by `delta` (and its requests by `requests`: -1, superseded).
 */
export function noticeWriter(db: Database.Database): {
  added(callId: number, cost: number): void
  moved(callId: number, delta: number, requests?: number): void
  /** A call stored as money, now a plan's: its money `delta` (minus its cost) leaves, counted under provider `was`. */
  reclassed(callId: number, delta: number, was: string): void
} {
  const insert = db.prepare('INSERT INTO call_notices (call_id, cost, delta, requests, was_provider) VALUES (?, ?, ?, ?, ?)')
  return {
    added: (callId, cost) => void insert.run(callId, cost, null, null, null),
    moved: (callId, delta, requests) => void insert.run(callId, null, delta, requests || null, null),
    reclassed: (callId, delta, was) => void insert.run(callId, null, delta, null, was),
  }
}

type NoticeRow = Record<string, unknown> & {
  seq: number; id: number | null; notice_cost: number | null; notice_delta: number | null; notice_requests: number | null
  /** A re-class's notice: the provider the call's money was counted under. */
  notice_was: string | null
  /** The call was re-classed after this notice was written: the provider it had then (its billing was money). */
  notice_before: string | null
}

/** A key's newest call still a request (its last-seen time and tenant, as a restart reads them), as ../import/supersede.ts reads it. */
const LATEST_SQL = 'SELECT ts, tenant FROM calls WHERE api_key_hash = ? AND origin_id IS NULL AND superseded_by IS NULL ORDER BY ts DESC, id DESC LIMIT 1'

export class CallNotices {
  private readonly readers = new Set<NoticeReader>()
  private readonly next: Database.Statement
  private readonly prune: Database.Statement
  private readonly latest: Database.Statement
  private timer: NodeJS.Timeout | null = null
  private more: NodeJS.Immediate | null = null
  private pruned = -1

  constructor(
    private readonly db: Database.Database,
    private readonly intervalMs = 2000,
  ) {
    this.next = db.prepare(
      // LEFT JOIN: a notice whose call is gone (retention pruned it meanwhile) is passed over, not read again and again.
      `SELECT n.seq AS seq, n.cost AS notice_cost, n.delta AS notice_delta, n.requests AS notice_requests, n.was_provider AS notice_was,
              (SELECT r.was_provider FROM call_notices r WHERE r.call_id = n.call_id AND r.was_provider IS NOT NULL AND r.seq > n.seq
                ORDER BY r.seq LIMIT 1) AS notice_before,
              c.id AS id, ${COLUMNS}
         FROM call_notices n LEFT JOIN calls c ON c.id = n.call_id WHERE n.seq > ? ORDER BY n.seq LIMIT ${BATCH}`,
    )
    this.prune = db.prepare('DELETE FROM call_notices WHERE seq <= ?')
    this.latest = db.prepare(LATEST_SQL)
  }

  /** Adds a reader; returns what removes it. */
  read(reader: NoticeReader): () => void {
    this.readers.add(reader)
    return () => this.readers.delete(reader)
  }

  start(): this {
    if (!this.timer) {
      this.timer = setInterval(this.tick, this.intervalMs)
      this.timer.unref()
    }
    return this
  }

  private tick = (): void => {
    try {
      this.poll()
    } catch {
      // a busy or unwritable file: read again on the next tick (nothing is deleted unread)
    }
  }

  /**
   * Gives every reader the calls noticed after its `through`, at most NOTICES_PER_TURN of them
   * (a started poller reads the rest on the next turns); returns how many notices were read.
   */
  poll(): number {
    if (this.readers.size === 0) return 0
    let read = 0
    for (;;) {
      if (read >= NOTICES_PER_TURN) {
        if (this.timer && !this.more) {
          this.more = setImmediate(() => {
            this.more = null
            this.tick()
          })
        }
        break
      }
      const from = this.oldest()
      const rows = this.next.all(from) as NoticeRow[]
      if (rows.length === 0) break
      read += rows.length
      const last = rows[rows.length - 1].seq
      // A superseded call's key's newest call left, once for all readers.
      const latest = new Map<number, KeyLatest | null>()
      for (const row of rows) {
        if (row.id === null || row.notice_delta === null || !row.notice_requests) continue
        const l = this.latest.get(row.api_key_hash) as KeyLatest | undefined
        latest.set(row.seq, l ? { ts: l.ts, tenant: l.tenant } : null)
      }
      for (const r of this.readers) {
        const calls: CallRecord[] = []
        const moves: CostAdjustment[] = []
        for (const found of rows) {
          if (found.seq <= r.through || found.id === null) continue
          // Written before the call was re-classed: read as the call was then.
          const row = found.notice_before === null ? found : { ...found, provider: found.notice_before, billing: 'api' }
          const plan = row.billing === 'subscription'
          if (row.notice_was !== null) {
            // Re-classed: its money leaves, under the provider it was counted by.
            if (row.notice_delta) moves.push(toMove({ ...row, provider: row.notice_was }, row.notice_delta))
          } else if (row.notice_delta === null) calls.push(toRecord(row))
          // No longer a request: moved whatever it cost (a plan's call by no money).
          else if (row.notice_requests) moves.push({ ...toMove(row, plan ? 0 : row.notice_delta), requests: row.notice_requests, latest: latest.get(row.seq) ?? null })
          else if (row.notice_delta !== 0 && !plan) moves.push(toMove(row, row.notice_delta))
        }
        r.through = Math.max(r.through, last)
        try {
          if (calls.length) r.take(calls)
          if (moves.length) r.moved?.(moves)
        } catch {
          // one reader's failure is its own: the others still count these calls
        }
      }
      if (rows.length < BATCH) break
    }
    // What every reader counts (by its load or from here) is not needed again.
    const done = this.oldest()
    if (done > this.pruned) {
      this.prune.run(done)
      this.pruned = done
    }
    return read
  }

  /** Reads every notice written so far, in one go (the calls stored before a move here count before it: CallLedger.catchUp). */
  drain(): void {
    while (this.poll() >= NOTICES_PER_TURN);
  }

  private oldest(): number {
    let min = Infinity
    for (const r of this.readers) min = Math.min(min, r.through)
    return min === Infinity ? 0 : min
  }

  close(): void {
    if (this.timer) clearInterval(this.timer)
    if (this.more) clearImmediate(this.more)
    this.timer = null
    this.more = null
    this.readers.clear()
  }
}

/** A new call as its notice tells it: with the cost it was stored with (its moves since come as notices of their own). */
function toRecord(row: NoticeRow): CallRecord {
  const call = {} as Record<string, unknown>
  for (const c of CALL_COLUMNS) call[c] = row[c]
  call.streamed = row.streamed === 1
  call.priced = row.priced === 1
  call.estimated = row.estimated === 1
  if (row.notice_cost !== null) call.cost_usd = row.notice_cost
  return call as unknown as CallRecord
}

function toMove(row: NoticeRow, delta: number): CostAdjustment {
  return {
    api_key_hash: row.api_key_hash as string, ts: row.ts as number, provider: row.provider as string, model: row.model as string,
    requested_model: (row.requested_model as string | null) ?? null, agent: row.agent as string, tenant: row.tenant as string,
    session: row.session as string, delta,
  }
}
