import type Database from 'better-sqlite3'
import { addReportZones } from '../../dashboard/rollup/report'
import { repairDimMoney } from '../../dashboard/rollup/backfill'
import { hasColumn } from '../../dashboard/rollup/writer'
import { PLAN_CALLS_INDEX } from '../../dashboard/plan-counts'
import { UNPRICED_SPEND_INDEX } from '../../dashboard/unpriced-counts'
import type { Migration } from './index'

/**
 * Versions 19 on, the newest last: what this machine keeps across restarts (background
 * responses, key patterns, budget announcements, the alert outbox), notices to a server beside,
 * superseded imports and the dashboard's indexes.
 */
export const MIGRATIONS_FROM_19: Migration[] = [
  {
    version: 19,
    description: 'background responses whose real usage could not be recorded yet (the database away): kept to be tried again after a restart',
    up: (db) => {
      // This machine's own bookkeeping (on PostgreSQL too: the data folder's file), as import keys are.
      db.exec(`CREATE TABLE IF NOT EXISTS background_pending (
        provider TEXT NOT NULL,
        response_id TEXT NOT NULL,
        done TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        first_at INTEGER NOT NULL,
        next_at INTEGER NOT NULL,
        PRIMARY KEY (provider, response_id)
      )`)
    },
  },
  {
    version: 20,
    description: 'calls another process stored in this file (`burnrate import` beside a running server), for that server to count in its spend and budget meters at once',
    up: (db) => {
      // One row a call, written in the transaction that stores it; the server deletes what it has read.
      db.exec(`CREATE TABLE IF NOT EXISTS call_notices (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        call_id INTEGER NOT NULL
      )`)
    },
  },
  {
    version: 21,
    description: 'the project and member breakdowns of ledgers upgraded through versions 8 and 10 while holding plan usage: money only, as the writer sums it',
    up: (db) => {
      repairDimMoney(db)
    },
  },
  {
    version: 22,
    description: 'the budget rule patterns each API key (by hash) was seen to match, so its spend is listed and alerted under its rules after a restart',
    up: (db) => {
      // This machine's own bookkeeping (on PostgreSQL too: the data folder's file). Patterns only, never a key.
      db.exec(`CREATE TABLE IF NOT EXISTS key_patterns (
        api_key_hash TEXT NOT NULL,
        pattern TEXT NOT NULL,
        PRIMARY KEY (api_key_hash, pattern)
      ) WITHOUT ROWID`)
    },
  },
  {
    version: 23,
    description: 'the budget reservations background responses still hold (their result not read yet): held again after a restart',
    up: (db) => {
      // This machine's own bookkeeping (on PostgreSQL too: the data folder's file). Ids and amounts only, never a key.
      db.exec(`CREATE TABLE IF NOT EXISTS background_holds (
        provider TEXT NOT NULL,
        response_id TEXT NOT NULL,
        api_key_hash TEXT NOT NULL,
        rule TEXT NOT NULL,
        session TEXT NOT NULL,
        ts INTEGER NOT NULL,
        amount REAL NOT NULL,
        until INTEGER NOT NULL,
        PRIMARY KEY (provider, response_id)
      )`)
    },
  },
  {
    version: 24,
    description: 'the calls of a session by time: a session cap counts a still-active session whole at start-up, however long ago it began',
    up: (db) => {
      // Partial: calls without a session (most of them on many ledgers) are never looked up by it.
      db.exec("CREATE INDEX IF NOT EXISTS calls_session_ts ON calls (session, ts) WHERE session <> ''")
    },
  },
  {
    version: 25,
    description: 'notices of imported calls whose cost moved (a log entry that grew), for a server beside to move its spend and budget meters by the difference',
    up: (db) => {
      // `cost`: a new call's cost as stored (the row may have grown since); `delta`: a moved call's
      // change of cost (the notice is of a move, not of a new call). Both NULL: a new call noticed
      // by an older writer, counted with its row's cost.
      const has = new Set((db.prepare('PRAGMA table_info(call_notices)').all() as { name: string }[]).map((c) => c.name))
      for (const col of ['cost', 'delta']) if (!has.has(col)) db.exec(`ALTER TABLE call_notices ADD COLUMN ${col} REAL`)
    },
  },
  {
    version: 26,
    description: 'the zone stretches of the report rollup, so that a second change of timezone (or a re-price) finds the rows a first one kept',
    up: (db) => addReportZones(db),
  },
  {
    version: 27,
    description: 'the budget thresholds announced in calendar periods not yet ended: not announced again after a restart',
    up: (db) => {
      // Hashed ids only (a rule's pattern may be a whole key), each with when its period ends.
      db.exec('CREATE TABLE IF NOT EXISTS budget_announced (id TEXT PRIMARY KEY, until INTEGER NOT NULL) WITHOUT ROWID')
    },
  },
  {
    version: 28,
    description: 'an imported call the proxy\'s record of the same answer superseded names that record (superseded_by): kept at $0, no request',
    up: (db) => addSupersededBy(db),
  },
  {
    version: 29,
    description: 'webhook alerts not delivered by a shutdown (a retry still waiting): sent by the next start',
    up: (db) => {
      // `target`: the webhook's address and format hashed (a webhook's path is a secret); `body`: the alert as sent.
      db.exec('CREATE TABLE IF NOT EXISTS alert_outbox (id TEXT PRIMARY KEY, target TEXT NOT NULL, body TEXT NOT NULL, until INTEGER NOT NULL) WITHOUT ROWID')
    },
  },
  {
    version: 30,
    description: 'notices of imported calls superseded (`burnrate import` beside a running server): no longer a request of their key there either',
    up: (db) => {
      // `requests`: a moved call's change of requests (-1: an imported call the proxy's record superseded); NULL: none.
      if (!hasColumn(db, 'call_notices', 'requests')) db.exec('ALTER TABLE call_notices ADD COLUMN requests INTEGER')
    },
  },
  {
    version: 31,
    description: 'the calls of no known price the dashboard\'s spend figures count as $0 (unpriced_requests), by time: read without reading the window\'s other calls',
    up: (db) => db.exec(UNPRICED_SPEND_INDEX),
  },
  {
    version: 32,
    description: 'the calls of a subscription plan by time: the dashboard\'s average cost per call is over the others (billed per token), counted without reading them',
    up: (db) => db.exec(PLAN_CALLS_INDEX),
  },
  {
    version: 33,
    description: 'the PostgreSQL claim of a webhook alert kept for the next start: sent by it only while that claim is still this instance\'s',
    up: (db) => {
      // `claim`: JSON {ids, token?} (../../alerts/outbox.ts KeptClaim); NULL: not claimed (SQLite, a runaway alert).
      if (!hasColumn(db, 'alert_outbox', 'claim')) db.exec('ALTER TABLE alert_outbox ADD COLUMN claim TEXT')
    },
  },
  {
    version: 34,
    description: 'notices of imported calls re-classed as a plan\'s (`burnrate import` beside a running server): their money leaves its spend and budget meters too',
    up: (db) => {
      // `was_provider`: a re-classed call's provider before (its money, `delta`, leaves under it); NULL: any other notice.
      if (!hasColumn(db, 'call_notices', 'was_provider')) db.exec('ALTER TABLE call_notices ADD COLUMN was_provider TEXT')
      db.exec('CREATE INDEX IF NOT EXISTS call_notices_reclassed ON call_notices (call_id, seq) WHERE was_provider IS NOT NULL')
    },
  },
  {
    version: 35,
    description: 'how many of a session\'s requests retention pruned, on its rollup row: the dashboard\'s sessions list no longer counts the calls it kept',
    up: (db) => {
      if (hasColumn(db, 'dash_session', 'pruned_requests')) return
      db.exec('ALTER TABLE dash_session ADD COLUMN pruned_requests INTEGER NOT NULL DEFAULT 0')
      // Pruned before this version: the session's requests but those of its calls kept that the
      // rollups include (not superseded), as the list counted them, once. The kept calls are counted
      // in one pass over the old sessions' calls, grouped: counted for each session row apart, a
      // name many agents or tenants share (a team server's `main`) had all its calls read once per row.
      const old = "session <> '' AND first_ts < (SELECT pruned_before FROM retention_state WHERE id = 1)"
      db.exec(`CREATE TEMP TABLE session_kept_35 (tenant TEXT NOT NULL, agent TEXT NOT NULL, session TEXT NOT NULL,
          n INTEGER NOT NULL, PRIMARY KEY (tenant, agent, session)) WITHOUT ROWID`)
      db.exec(`INSERT INTO session_kept_35 (tenant, agent, session, n)
        SELECT tenant, agent, session, count(*) FROM calls
         WHERE session IN (SELECT session FROM dash_session WHERE ${old}) AND session <> '' AND superseded_by IS NULL
           AND id <= (SELECT last_call_id FROM dash_state WHERE id = 1)
         GROUP BY tenant, agent, session`)
      db.exec(`UPDATE dash_session SET pruned_requests = max(0, requests - coalesce((
          SELECT k.n FROM session_kept_35 k WHERE k.tenant = dash_session.tenant AND k.agent = dash_session.agent
             AND k.session = dash_session.session), 0))
        WHERE ${old}`)
      db.exec('DROP TABLE session_kept_35')
    },
  },
]

/**
 * `calls.superseded_by`: the proxied call that superseded an imported one (../../import/supersede.ts),
 * NULL for every other call; and the imported calls that may still be superseded, by answer id
 * (what the proxy looks up as it records an answer: a few, whatever the ledger's size).
 */
export function addSupersededBy(db: Database.Database): void {
  if (!hasColumn(db, 'calls', 'superseded_by')) db.exec('ALTER TABLE calls ADD COLUMN superseded_by INTEGER')
  db.exec("CREATE INDEX IF NOT EXISTS calls_import_answer ON calls (response_id) WHERE source = 'import' AND response_id <> '' AND superseded_by IS NULL")
}
