import type Database from 'better-sqlite3'
import { Ledger } from '../ledger/ledger'
import { ANNOUNCED_ENDED_SQL, type AnnouncedRow, SAVE_ANNOUNCED_SQL } from '../ledger/side-writes'
import type { CallLedger } from '../ledger/types'
import { ensurePostgresSchema } from '../storage/postgres-migrations'
import type { SqlStore } from '../storage/sql'

const READ_SQL = 'SELECT id, until FROM budget_announced WHERE until > @now'

/**
 * The budget thresholds announced in calendar periods not yet ended (`budget_announced`), kept with
 * the ledger so that a restart does not announce one again in its period (./announcer.ts): the
 * Slack or webhook alert and the desktop notification of a threshold come once per period, as
 * from a server left running. Rows of ended periods are deleted with the next one kept (on
 * PostgreSQL, by each instance an hour apart at most).
 */
export interface AnnouncedStore {
  /** Keeps a threshold just announced at `now` (never a write of its own on a call's way on SQLite). */
  save(id: string, until: number, now: number): void
}

/**
 * SQLite: read at start-up (with the rows the ledger has not written yet: a spill file's the
 * database could not take, ../ledger/restored.ts); written with the ledger's next batch of calls,
 * in its transaction (../ledger/side-writes.ts), so a crash loses what the calls lost with it lose.
 */
export class SqliteAnnounced implements AnnouncedStore {
  constructor(
    private readonly db: Database.Database,
    private readonly ledger: CallLedger,
  ) {}

  /** The thresholds announced in periods that end after `now`. */
  load(now: number): AnnouncedRow[] {
    const rows = this.db.prepare(READ_SQL).all({ now }) as AnnouncedRow[]
    if (this.ledger instanceof Ledger) {
      for (const w of this.ledger.unwritten().side) if ('announced' in w && w.announced.until > now) rows.push(w.announced)
    }
    return rows
  }

  /** Keeps a threshold just announced; the rows of periods ended by now go in the same write (a start writes nothing: an idle server starts no write thread). */
  save(id: string, until: number, now: number): void {
    if (this.ledger instanceof Ledger) this.ledger.keepWithNextBatch([{ announcedEnded: { before: now } }, { announced: { id, until } }])
    else {
      this.db.prepare(ANNOUNCED_ENDED_SQL).run({ before: now })
      this.db.prepare(SAVE_ANNOUNCED_SQL).run({ id, until })
    }
  }
}

/**
 * How often at most an instance's `save` on PostgreSQL also deletes the rows of ended periods: a
 * period ends at a day's start at the soonest, so most saves need no delete of their own, and the
 * rows an hour leaves are few (`until` is indexed, PostgreSQL migration 17).
 */
const SWEEP_EVERY_MS = 3_600_000
/** How long after a failed write of an announcement it is written again (PostgreSQL away, the connection cut). */
const RETRY_SAVE_MS = 5000
/** Announcements waiting to be written again, at most (a bound, never reached in practice). */
const MAX_UNSAVED = 10_000

/**
 * PostgreSQL (`storage.url`): shared by the instances, so an instance started again knows what
 * any of them announced; written off the call's path. The webhooks are also claimed per crossing
 * (../alerts/claims.ts), which this does not replace: it covers the announcer itself. Read with
 * the meters (./shared.ts), before they are rebuilt.
 *
 * Each is also kept at once in this instance's own SQLite file (`local`: its `budget_announced`,
 * which nothing else writes on PostgreSQL), and read back and written to PostgreSQL with the next
 * load: while PostgreSQL is away the write is retried in memory only, and an instance killed
 * outright then (SIGKILL, an OOM kill) announced the threshold again after its restart. A spill
 * file of the SQLite ledger read on PostgreSQL (../storage/spilled-side.ts) leaves its announced
 * thresholds there too.
 */
export class PgAnnounced implements AnnouncedStore {
  /** When this instance last deleted the rows of ended periods (`load`, or a `save`). */
  private sweptAt = -Infinity
  /**
   * Announcements whose write failed, with when their period ends: written again until they are
   * (or their period ended). Dropped, the instance with the team's webhook, started again after
   * the crossing, read the spend over the threshold with no announcement of it and never sent it.
   */
  private readonly unsaved = new Map<string, number>()
  private retryTimer: NodeJS.Timeout | null = null
  private closed = false

  constructor(
    private readonly store: SqlStore,
    private readonly local?: Database.Database,
  ) {}

  /**
   * The thresholds any instance announced in periods that end after `now`, and those this one kept
   * in its own file (written to PostgreSQL now, if they were not); those of ended periods are deleted.
   */
  async load(now: number): Promise<AnnouncedRow[]> {
    await ensurePostgresSchema(this.store)
    const rows = await this.store.all<{ id: string; until: number | string }>(READ_SQL, { now })
    this.sweptAt = now
    void this.store.run(ANNOUNCED_ENDED_SQL, { before: now }).catch(() => {})
    const out = rows.map((r) => ({ id: r.id, until: Number(r.until) }))
    const shared = new Map(out.map((r) => [r.id, r.until]))
    for (const r of this.readLocal(now)) {
      if ((shared.get(r.id) ?? -Infinity) >= r.until) continue
      out.push(r)
      void this.write(r.id, r.until)
    }
    return out
  }

  /**
   * Keeps a threshold just announced; the rows of periods ended by `now` are deleted after it when
   * this instance last did so an hour or more ago (or its clock went back), as a long-running
   * instance is not reloaded. A failed delete leaves them to the next one.
   */
  save(id: string, until: number, now: number): void {
    this.keepLocal(id, until, now)
    const sweep = !(now >= this.sweptAt && now - this.sweptAt < SWEEP_EVERY_MS)
    if (sweep) this.sweptAt = now
    const saved = this.write(id, until)
    if (sweep) void saved.then((ok) => (ok ? this.store.run(ANNOUNCED_ENDED_SQL, { before: now }) : 0)).catch(() => {})
  }

  /** Stops writing again what could not be written (the server's close). */
  close(): void {
    this.closed = true
    if (this.retryTimer) clearTimeout(this.retryTimer)
    this.retryTimer = null
  }

  /** Keeps an announcement in this instance's file, off the call's turn; the rows of ended periods go with it. */
  private keepLocal(id: string, until: number, now: number): void {
    const db = this.local
    if (!db) return
    setImmediate(() => {
      try {
        db.transaction(() => {
          db.prepare(ANNOUNCED_ENDED_SQL).run({ before: now })
          db.prepare(SAVE_ANNOUNCED_SQL).run({ id, until })
        })()
      } catch {
        // busy or closed: PostgreSQL's copy (or its retries) is what is left
      }
    })
  }

  private readLocal(now: number): AnnouncedRow[] {
    try {
      return (this.local?.prepare(READ_SQL).all({ now }) as AnnouncedRow[] | undefined) ?? []
    } catch {
      return []
    }
  }

  /** Writes one announcement; a failed write is tried again in RETRY_SAVE_MS. Resolves with whether it was written. */
  private write(id: string, until: number): Promise<boolean> {
    return ensurePostgresSchema(this.store)
      .then(() => this.store.run(SAVE_ANNOUNCED_SQL, { id, until }))
      .then(
        () => true,
        () => {
          this.later(id, until)
          return false
        },
      )
  }

  private later(id: string, until: number): void {
    if (this.closed) return
    if (this.unsaved.size < MAX_UNSAVED) this.unsaved.set(id, until)
    if (this.retryTimer) return
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null
      const now = Date.now()
      const due = [...this.unsaved]
      this.unsaved.clear()
      for (const [i, u] of due) if (u > now) void this.write(i, u)
    }, RETRY_SAVE_MS)
    this.retryTimer.unref()
  }
}
