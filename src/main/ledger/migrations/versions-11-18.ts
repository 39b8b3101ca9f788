import { createReportTables, reportZone } from '../../dashboard/rollup/report'
import { createReportSessions } from '../../dashboard/rollup/report-sessions'
import { createReportMonths, repairSkippedMidnights } from '../../dashboard/rollup/report-build'
import { hasColumn } from '../../dashboard/rollup/writer'
import type { Migration } from './index'

/** Versions 11 to 18: the report rollup, the indexes for 10M calls, what re-pricing keeps of a call, and revisions. */
export const MIGRATIONS_11_18: Migration[] = [
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
]
