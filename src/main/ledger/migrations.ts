import type Database from 'better-sqlite3'
import { addReportZones, createReportTables, reportZone } from '../dashboard/rollup/report'
import { createReportSessions } from '../dashboard/rollup/report-sessions'
import { createReportMonths, repairSkippedMidnights } from '../dashboard/rollup/report-build'
import { createRollupTables } from '../dashboard/rollup/schema'
import { backfillDimRollups, backfillProjectRollups, repairDimMoney } from '../dashboard/rollup/backfill'
import { RollupWriter, hasColumn } from '../dashboard/rollup/writer'
import { PLAN_CALLS_INDEX } from '../dashboard/plan-counts'
import { UNPRICED_SPEND_INDEX } from '../dashboard/unpriced-counts'

/**
 * Versioned schema migrations, applied in order at start-up inside one transaction each;
 * `PRAGMA user_version` records the last one applied. Never edit a released migration:
 * append a new one.
 */
export interface Migration {
  version: number
  description: string
  up: (db: Database.Database) => void
}

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    description: 'calls ledger and runtime budget rules',
    up: (db) => {
      db.exec(`
        CREATE TABLE calls (
          id INTEGER PRIMARY KEY,
          ts INTEGER NOT NULL,
          provider TEXT NOT NULL,
          model TEXT NOT NULL,
          endpoint TEXT NOT NULL,
          api_key_hash TEXT NOT NULL,
          key_hint TEXT NOT NULL,
          tenant TEXT NOT NULL,
          agent TEXT NOT NULL,
          session TEXT NOT NULL,
          status INTEGER NOT NULL,
          streamed INTEGER NOT NULL,
          input_tokens INTEGER NOT NULL,
          output_tokens INTEGER NOT NULL,
          cache_read_tokens INTEGER NOT NULL,
          cache_write_tokens INTEGER NOT NULL,
          cache_write_1h_tokens INTEGER NOT NULL,
          reasoning_tokens INTEGER NOT NULL,
          cost_usd REAL NOT NULL,
          priced INTEGER NOT NULL,
          estimated INTEGER NOT NULL,
          latency_ms REAL NOT NULL,
          error TEXT
        );
        CREATE INDEX calls_ts ON calls (ts);
        CREATE INDEX calls_key_ts ON calls (api_key_hash, ts);
        CREATE INDEX calls_tenant_ts ON calls (tenant, ts);

        CREATE TABLE budget_rules (
          api_key_pattern TEXT PRIMARY KEY,
          daily_limit_usd REAL,
          monthly_limit_usd REAL,
          action TEXT NOT NULL CHECK (action IN ('block', 'warn')),
          soft_limit_pct REAL,
          created_at INTEGER NOT NULL
        );
      `)
    },
  },
  {
    version: 2,
    description: 'dashboard rollups (5-minute, hourly, per grouping, per session) and cost indexes, backfilled',
    up: (db) => {
      createRollupTables(db)
      new RollupWriter(db).catchUp()
    },
  },
  {
    version: 3,
    description: 'call fields of the second wave: response id, source, billing, project, member',
    up: (db) => {
      db.exec(`
        ALTER TABLE calls ADD COLUMN response_id TEXT NOT NULL DEFAULT '';
        ALTER TABLE calls ADD COLUMN source TEXT NOT NULL DEFAULT 'proxy';
        ALTER TABLE calls ADD COLUMN billing TEXT NOT NULL DEFAULT 'api';
        ALTER TABLE calls ADD COLUMN project TEXT NOT NULL DEFAULT '';
        ALTER TABLE calls ADD COLUMN member TEXT NOT NULL DEFAULT '';
      `)
    },
  },
  {
    version: 4,
    description: 'budget rules: the second-wave fields (windows, scopes, rate limits, alerts, reserve) as one JSON column',
    up: (db) => {
      db.exec(`ALTER TABLE budget_rules ADD COLUMN options TEXT NOT NULL DEFAULT '{}'`)
    },
  },
  {
    version: 5,
    description: 'runtime price overrides (admin API) and an index of unpriced calls',
    up: (db) => {
      db.exec(`
        CREATE TABLE price_overrides (
          provider TEXT NOT NULL,
          model TEXT NOT NULL,
          input_mtok REAL NOT NULL,
          output_mtok REAL NOT NULL,
          cache_read_mtok REAL,
          cache_write_mtok REAL,
          updated_at INTEGER NOT NULL,
          PRIMARY KEY (provider, model)
        );
        CREATE INDEX calls_unpriced ON calls (provider, model) WHERE priced = 0;
      `)
    },
  },
  {
    version: 6,
    description: 'plan usage apart from spend in the rollups: API-equivalent value of subscription calls per hour and day',
    up: (db) => {
      // No backfill: no call was recorded as a subscription call before this version.
      db.exec(`
        ALTER TABLE dash_hour ADD COLUMN plan_value_usd REAL NOT NULL DEFAULT 0;
        ALTER TABLE dash_day ADD COLUMN plan_value_usd REAL NOT NULL DEFAULT 0;
      `)
    },
  },
  {
    version: 7,
    description: 'log import: provider response-id index, import keys (idempotency) and imported files',
    up: (db) => {
      db.exec(`
        CREATE INDEX calls_response_id ON calls (response_id) WHERE response_id <> '';
        CREATE TABLE import_keys (
          key TEXT PRIMARY KEY,
          call_id INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX import_keys_call ON import_keys (call_id);
        CREATE TABLE import_files (
          path TEXT PRIMARY KEY,
          size INTEGER NOT NULL,
          mtime_ms REAL NOT NULL
        ) WITHOUT ROWID;
      `)
    },
  },
  {
    version: 8,
    description: 'dashboard rollups by project (backfilled from calls already folded)',
    up: (db) => backfillProjectRollups(db),
  },
  {
    version: 9,
    description: 'call key: a unique id a writer gives a call, so a batch sent again is not counted twice (PostgreSQL ledger, ingest)',
    up: (db) => {
      // Partial: calls recorded without a key (every call of the embedded ledger) cost the index nothing.
      db.exec(`
        ALTER TABLE calls ADD COLUMN call_key TEXT;
        CREATE UNIQUE INDEX calls_call_key ON calls (call_key) WHERE call_key IS NOT NULL;
      `)
    },
  },
  {
    version: 10,
    description: 'team server: the sender\'s call id of ingested calls (idempotency per member), a member index, member rollups, the sender\'s cursor',
    up: (db) => {
      db.exec(`
        ALTER TABLE calls ADD COLUMN origin_id INTEGER;
        CREATE UNIQUE INDEX calls_origin ON calls (member, origin_id) WHERE origin_id IS NOT NULL;
        CREATE INDEX calls_member_ts ON calls (member, ts) WHERE member <> '';
        CREATE TABLE team_cursor (
          url TEXT PRIMARY KEY,
          last_id INTEGER NOT NULL,
          updated_at INTEGER NOT NULL
        ) WITHOUT ROWID;
      `)
      backfillDimRollups(db, 'member', 'member')
    },
  },
  {
    version: 11,
    description: 'report rollup: per local day, tenant and model (and agent, project, session), built for the configured zone at start-up',
    up: (db) => createReportTables(db),
  },
  {
    version: 12,
    description: 'indexes for 10M calls (the costliest-calls indexes carry ts, the unpriced index covers its query, no key index) and the retention mark',
    up: (db) => {
      // expensive walks the cost index from the top until it has found enough calls of the window:
      // with ts in the index that walk never reads the table. unpriced sums the unpriced calls of
      // every model from the partial index alone. No query looks calls up by key: the (key, ts)
      // index only tempted the planner into reading all of it for the start-up per-key sums of
      // this month (seconds at 10M calls, where the ts index reads the month), and cost 78 MB per
      // million calls (a 64-character hash in every entry).
      db.exec(`
        DROP INDEX calls_key_ts;
        DROP INDEX calls_cost;
        CREATE INDEX calls_cost ON calls (cost_usd, ts);
        DROP INDEX calls_tenant_cost;
        CREATE INDEX calls_tenant_cost ON calls (tenant, cost_usd, ts);
        DROP INDEX calls_unpriced;
        CREATE INDEX calls_unpriced ON calls (provider, model, tenant, ts, input_tokens, output_tokens) WHERE priced = 0;
        CREATE TABLE retention_state (
          id INTEGER PRIMARY KEY CHECK (id = 1),
          pruned_before INTEGER NOT NULL
        );
        INSERT INTO retention_state (id, pruned_before) VALUES (1, 0);
      `)
    },
  },
  {
    version: 13,
    description: 'report rollup per local month, filled from its days, so reports over months read months',
    up: (db) => createReportMonths(db),
  },
  {
    version: 14,
    description: 'report rollup session totals (first and last call, cost) and session indexes, so a session report finds its costliest sessions without summing all of them',
    up: (db) => createReportSessions(db, reportZone(db) !== null),
  },
  {
    version: 15,
    description: 'the model a call requested, when the answer names another (budget rules match either, also after a restart)',
    up: (db) => {
      // Nullable with no default: SQLite changes only the schema, whatever the size of the ledger.
      // No backfill: calls recorded before this version never kept it. (A ledger whose version
      // was set back by hand may have the column already.)
      const columns = db.prepare("SELECT name FROM pragma_table_info('calls')").pluck().all()
      if (!columns.includes('requested_model')) db.exec('ALTER TABLE calls ADD COLUMN requested_model TEXT')
    },
  },
  {
    version: 16,
    description: 'what a call was billed for beyond its token columns (searches, modality splits, audio seconds, the provider\'s own charge), so re-pricing keeps it',
    up: (db) => {
      // Nullable with no default, as version 15: a schema change only. No backfill: calls
      // recorded before this version are re-priced from their token columns alone.
      const columns = db.prepare("SELECT name FROM pragma_table_info('calls')").pluck().all()
      if (!columns.includes('usage_extra')) db.exec('ALTER TABLE calls ADD COLUMN usage_extra TEXT')
    },
  },
  {
    version: 17,
    description: 'revisions: a call whose cost or tokens changed after it was recorded is sent to the team server again (its revision, and the sender\'s cursor over them)',
    up: (db) => {
      // Nullable with no default: a schema change only (NULL: never revised). On a team server
      // an ingested call holds the sender's revision of it. (Each step only where it is missing.)
      if (!hasColumn(db, 'calls', 'revision')) db.exec('ALTER TABLE calls ADD COLUMN revision INTEGER')
      db.exec('CREATE INDEX IF NOT EXISTS calls_revision ON calls (revision) WHERE revision IS NOT NULL')
      if (!hasColumn(db, 'team_cursor', 'revision')) db.exec('ALTER TABLE team_cursor ADD COLUMN revision INTEGER NOT NULL DEFAULT 0')
      if (!hasColumn(db, 'team_cursor', 'revision_id')) db.exec('ALTER TABLE team_cursor ADD COLUMN revision_id INTEGER NOT NULL DEFAULT 0')
    },
  },
  {
    version: 18,
    description: 'report rollup: days whose midnight does not exist, keyed an hour early by releases before the time audit, move to their true start (once, instead of at every start-up)',
    up: (db) => {
      const tz = reportZone(db)
      if (tz !== null) repairSkippedMidnights(db, tz)
    },
  },
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
      // `claim`: JSON {ids, token?} (../alerts/outbox.ts KeptClaim); NULL: not claimed (SQLite, a runaway alert).
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
]

/**
 * `calls.superseded_by`: the proxied call that superseded an imported one (../import/supersede.ts),
 * NULL for every other call; and the imported calls that may still be superseded, by answer id
 * (what the proxy looks up as it records an answer: a few, whatever the ledger's size).
 */
export function addSupersededBy(db: Database.Database): void {
  if (!hasColumn(db, 'calls', 'superseded_by')) db.exec('ALTER TABLE calls ADD COLUMN superseded_by INTEGER')
  db.exec("CREATE INDEX IF NOT EXISTS calls_import_answer ON calls (response_id) WHERE source = 'import' AND response_id <> '' AND superseded_by IS NULL")
}

/**
 * A database older than this Burnrate's schema, opened where it must not be upgraded: another
 * Burnrate serves its data folder, and may not know the newer schema (../cli/target.ts).
 */
export class SchemaBehindError extends Error {
  constructor(
    readonly file: string,
    readonly current: number,
    readonly latest: number,
  ) {
    super(`the database ${file} is at schema version ${current}, older than this Burnrate's (${latest})`)
  }
}

/** The schema version the database records, and the newest these migrations make. */
export function schemaVersions(db: Database.Database, migrations: readonly Migration[] = MIGRATIONS): { current: number; latest: number } {
  return { current: db.pragma('user_version', { simple: true }) as number, latest: migrations.reduce((m, x) => Math.max(m, x.version), 0) }
}

export function migrate(db: Database.Database, migrations: readonly Migration[] = MIGRATIONS): number {
  const { current, latest } = schemaVersions(db, migrations)
  if (current > latest) {
    throw new Error(
      `the database schema is version ${current}, newer than this Burnrate knows (${latest}); upgrade Burnrate`,
    )
  }
  for (const m of migrations) {
    if (m.version <= current) continue
    // Each step holds the write lock from its start and reads the version again under it: another
    // process upgrading the same file at once (an import beside a server starting) may have run it.
    db.transaction(() => {
      if ((db.pragma('user_version', { simple: true }) as number) >= m.version) return
      m.up(db)
      db.pragma(`user_version = ${m.version}`)
    }).immediate()
  }
  return latest
}
