import type Database from 'better-sqlite3'

/**
 * Rows other than calls that the SQLite ledger writes in the transaction of its next batch of
 * calls, on whichever thread writes it (./write-worker.ts), so that none takes a write of its own
 * on a call's way (the hot path does no disk I/O): the budget rule prefix patterns a key was seen
 * to match (budgets/key-patterns.ts) and background responses' held reservations
 * (budgets/background-holds.ts), and the budget thresholds announced in calendar periods
 * (budgets/announced.ts). They are applied in the order they were kept.
 */
export type SideWrite =
  | { pattern: KeyPattern }
  | { hold: HoldRow }
  | { unhold: { provider: string; responseId: string } }
  | { announced: AnnouncedRow }
  | { announcedEnded: { before: number } }

/** A budget threshold announced in a calendar period (`budget_announced`, ledger migration 27). */
export interface AnnouncedRow {
  /** The crossing's id, hashed (budgets/announced.ts): it names a rule's pattern, which may be a whole key. */
  id: string
  /** When its period ends (ms): forgotten then. */
  until: number
}

/** One budget rule prefix pattern an API key (by hash) was seen to match (`key_patterns`, ledger migration 22). */
export interface KeyPattern {
  api_key_hash: string
  pattern: string
}

/** A background response's held reservation (`background_holds`, ledger migration 23). */
export interface HoldRow {
  /** Burnrate's provider name and the response's id (`resp_…`): what a later answer about it names. */
  provider: string
  responseId: string
  /** The creating call's key (by hash), arrival time and session: what its cost moves are named by. */
  keyHash: string
  ts: number
  session: string
  /** The identity of the rule it was reserved under (budgets/scope.ts `ruleIdentity`). */
  rule: string
  /** What was reserved (USD): the call's expected cost, as at admission. */
  amount: number
  /** When the hold ends even if the result is never read (ms). */
  until: number
}

export const INSERT_KEY_PATTERN_SQL = 'INSERT OR IGNORE INTO key_patterns (api_key_hash, pattern) VALUES (@api_key_hash, @pattern)'
export const SAVE_HOLD_SQL = `INSERT OR REPLACE INTO background_holds (provider, response_id, api_key_hash, rule, session, ts, amount, until)
  VALUES (@provider, @responseId, @keyHash, @rule, @session, @ts, @amount, @until)`
export const REMOVE_HOLD_SQL = 'DELETE FROM background_holds WHERE provider = @provider AND response_id = @responseId'
/**
 * A threshold kept again (a rolling window crossed again) keeps the later end: left with the first
 * crossing's, the record of the second ended hours early (a calendar period's end is its end).
 */
export const SAVE_ANNOUNCED_SQL = `INSERT INTO budget_announced (id, until) VALUES (@id, @until)
  ON CONFLICT (id) DO UPDATE SET until = excluded.until WHERE budget_announced.until < excluded.until`
export const ANNOUNCED_ENDED_SQL = 'DELETE FROM budget_announced WHERE until <= @before'

/** The statements of `db` that apply side writes, in order (run inside the caller's transaction). */
export function sideWriter(db: Database.Database): (writes: readonly SideWrite[]) => void {
  const pattern = db.prepare(INSERT_KEY_PATTERN_SQL)
  const save = db.prepare(SAVE_HOLD_SQL)
  const remove = db.prepare(REMOVE_HOLD_SQL)
  const announced = db.prepare(SAVE_ANNOUNCED_SQL)
  const ended = db.prepare(ANNOUNCED_ENDED_SQL)
  return (writes) => {
    for (const w of writes) {
      if ('pattern' in w) pattern.run(w.pattern)
      else if ('hold' in w) save.run(w.hold)
      else if ('unhold' in w) remove.run(w.unhold)
      else if ('announced' in w) announced.run(w.announced)
      else ended.run(w.announcedEnded)
    }
  }
}
