import { backfillDimRollups, backfillProjectRollups } from '../../dashboard/rollup/backfill'
import { createRollupTables } from '../../dashboard/rollup/schema'
import { RollupWriter } from '../../dashboard/rollup/writer'
import type { Migration } from './index'

/** Versions 1 to 10: the calls ledger and budget rules, the dashboard rollups, log import, call keys and the team server. */
export const MIGRATIONS_1_10: Migration[] = [
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
]
