import type Database from 'better-sqlite3'
import { type CallNotices, type NoticeReader, latestNotice, readWithNotices } from '../ledger/notices'
import { Ledger } from '../ledger/ledger'
import type { CallRecord } from '../ledger/record'
import type { CallLedger } from '../ledger/types'
import { minuteOf } from './meter-counters'
import type { BudgetEngine } from './engine'
import type { KeyCount } from './key-registry'
import type { HistoryRow } from './meter-book'
import { HISTORY_SQL, KEYS_SQL, RECENT_SQL, SESSION_HISTORY_SQL, keysParams, recentParams } from './shared-history'

/**
 * SQLite: the recorded calls the meters start from (at start-up and at every rule change), per
 * minute, read from this server's file; and the calls another process (`burnrate import`) stores
 * in it afterwards, counted as they are noticed, each only when the meters' last read of the
 * ledger did not already hold it (../ledger/notices.ts). PostgreSQL's counterpart: ./shared.ts.
 */
export class LocalHistory {
  private readonly query: Database.Statement
  private readonly sessions: Database.Statement
  private readonly recent: Database.Statement
  private readonly keys: Database.Statement
  private readonly noticed: NoticeReader
  /** The key registry was read with the meters (a rule needs them): the start-up needs no seed of its own. */
  keysRead = false

  constructor(
    private readonly db: Database.Database,
    private readonly ledger: CallLedger,
    private readonly engine: () => BudgetEngine | null,
  ) {
    // The same rows PostgreSQL's instances read (./shared-history.ts).
    this.query = db.prepare(HISTORY_SQL)
    this.sessions = db.prepare(SESSION_HISTORY_SQL)
    this.recent = db.prepare(RECENT_SQL)
    this.keys = db.prepare(KEYS_SQL)
    this.noticed = {
      // Moved on at every read of the ledger, and by the key registry's start-up seed when no rule needs one (seedKeys).
      through: latestNotice(db),
      take: (calls) => {
        const e = this.engine()
        if (e) for (const c of calls) e.observe(c)
      },
      moved: (moves) => this.engine()?.adjust(moves),
    }
  }

  /**
   * The calls since `since`, per key, scope, session and minute, the older spend of the sessions
   * with a call since `sessionsSince`, and the last minute's requests and tokens (the engine's
   * `loadHistory`).
   */
  load(since: number, sessionsSince: number | null = null): HistoryRow[] {
    let flushed = false
    try {
      // Calls still held in memory are written first, so none is missed (or counted twice).
      flushed = this.ledger.flush()
    } catch {
      // a database that cannot be written now: the held calls are counted from memory below
    }
    const engine = this.engine()
    const readAt = Date.now()
    const unwritten = !flushed && this.ledger instanceof Ledger ? this.ledger.unwritten().calls : []
    const { value, through } = readWithNotices(this.db, () => {
      const rows = this.query.all({ since }) as HistoryRow[]
      // Calls the database could not take yet (locked, full): spent all the same, so counted from
      // memory (those of a spill file too, ../ledger/restored.ts). Once written, they leave the
      // ledger's memory in the same step: never counted from both.
      for (const c of unwritten) rows.push(historyRowOf(c))
      if (sessionsSince !== null) for (const r of this.sessions.iterate({ since, active: sessionsSince })) rows.push(r as HistoryRow)
      // The last minute's requests and tokens, after the money (in time order).
      for (const r of this.recent.iterate(recentParams(Date.now()))) rows.push(r as HistoryRow)
      // This month's keys from the same read: the notices it moves past (their calls in it) are
      // never read for the key registry either. Read before, the calls `burnrate import` stored
      // meanwhile were in the meters and never counted as their keys' requests (and taken off
      // once superseded: one less than the key has).
      const keys = engine ? (this.keys.all(keysParams(engine.clock, readAt)) as KeyCount[]) : null
      return { rows, keys }
    })
    this.noticed.through = through
    if (engine && value.keys) {
      engine.shared.reseed(value.keys, unwritten, readAt)
      this.keysRead = true
    }
    return value.rows
  }

  /**
   * The key registry's start-up seed when no rule read it with the meters: this month's keys (the
   * month of `at`), in one read with the newest notice, which the notices are then read after.
   * Read apart, a `burnrate import` committing between the two was in the seed and read again
   * from its notice: its call two of its key's requests until a restart.
   */
  seedKeys(engine: BudgetEngine, at: number): void {
    const { value, through } = readWithNotices(this.db, () => this.keys.all(keysParams(engine.clock, at)) as KeyCount[])
    this.noticed.through = through
    engine.seed(value, at)
  }

  /** Counts the calls other processes store from now on; returns what stops it. */
  follow(notices: CallNotices): () => void {
    return notices.read(this.noticed)
  }
}

/** A call not yet on disk as the history queries read one (HISTORY_SQL: money only, by minute). */
function historyRowOf(c: CallRecord): HistoryRow {
  return {
    api_key_hash: c.api_key_hash,
    key_hint: c.key_hint,
    provider: c.provider,
    model: c.model,
    requested: c.requested_model ?? null,
    agent: c.agent,
    tenant: c.tenant,
    session: c.session,
    t: minuteOf(c.ts),
    cost: c.billing === 'subscription' ? 0 : c.cost_usd,
    tokens: 0,
    requests: 0,
    last: c.ts,
  }
}
