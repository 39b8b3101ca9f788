import type { PgMigration } from './index'

/**
 * Versions 6 to 14: rolling windows (and their hours), the requested model and what re-pricing
 * keeps, the shared budget clock, revisions, alert claims and settlement markers.
 */
export const PG_MIGRATIONS_6_14: PgMigration[] = [
  {
    version: 6,
    description: 'rolling windows shared by instances: spend per minute of arrival for each window spend row',
    // A window's spend row (budget_spend, period 'window', period_start = the window's length in
    // ms) holds its reservations; its spend is here, per arrival minute. The function reads the
    // buckets in the window with a snapshot of its own (a VOLATILE function takes a fresh one for
    // each query, in READ COMMITTED), so admission, calling it after locking the row, sees every
    // bucket written by a transaction that held the row's lock before it (see pg/admission.ts).
    sql: `
      CREATE TABLE budget_window_spend (
        spend_id BIGINT NOT NULL REFERENCES budget_spend (id) ON DELETE CASCADE,
        minute BIGINT NOT NULL,
        spent_usd DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (spend_id, minute)
      );
      CREATE INDEX budget_window_spend_minute ON budget_window_spend (minute);
      CREATE INDEX budget_spend_window ON budget_spend (api_key_hash) WHERE period = 'window';
      CREATE FUNCTION burnrate_window_spent(sid BIGINT, edge DOUBLE PRECISION) RETURNS DOUBLE PRECISION
        LANGUAGE sql VOLATILE
        AS 'SELECT COALESCE(SUM(spent_usd), 0)::float8 FROM budget_window_spend WHERE spend_id = sid AND minute + 60000 > edge'
    `,
  },
  {
    version: 7,
    description: 'the model a call requested, when the answer names another (budget rules match either; SQLite version 15)',
    // Nullable with no default: a catalog change only, no rewrite of the table however many calls
    // it holds. No backfill: calls recorded before this version never kept it.
    sql: `
      ALTER TABLE calls ADD COLUMN requested_model TEXT
    `,
  },
  {
    version: 8,
    description: 'what a call was billed for beyond its token columns, as compact JSON, so re-pricing keeps it (SQLite version 16)',
    // Nullable with no default: a catalog change only. No backfill: older calls are re-priced from their token columns.
    sql: `
      ALTER TABLE calls ADD COLUMN usage_extra TEXT
    `,
  },
  {
    version: 9,
    description: 'the budget clock shared by instances: the zone and first weekday budget periods are counted in',
    // One row, versioned in itself (SharedTable): NULL until the first instance that knows it starts.
    sql: `
      CREATE TABLE budget_clock (
        one INTEGER PRIMARY KEY CHECK (one = 1),
        version BIGINT NOT NULL,
        timezone TEXT,
        week_start TEXT,
        set_at BIGINT
      );
      INSERT INTO budget_clock (one, version) VALUES (1, 0)
    `,
  },
  {
    version: 10,
    description: 'revisions of calls (SQLite version 17): a team server holds the revision of each ingested call it was sent',
    // Nullable with no default: a catalog change only.
    sql: `
      ALTER TABLE calls ADD COLUMN revision BIGINT;
      CREATE INDEX calls_revision ON calls (revision) WHERE revision IS NOT NULL
    `,
  },
  {
    version: 11,
    description: 'budget threshold alerts claimed by the instance that sends them: every instance sees every call, one webhook goes out',
    sql: `
      CREATE TABLE alert_claims (
        id TEXT PRIMARY KEY,
        claimed_at TIMESTAMPTZ NOT NULL DEFAULT now()
      )
    `,
  },
  {
    version: 12,
    description: 'rolling windows: their spend per hour too, so admission sums at most an hour of minutes and the hours after it (was: every minute of the row, up to 768 hours of them)',
    // The hour buckets follow the minute buckets by a trigger, whatever writes them (an instance
    // of an earlier release during an upgrade too). A minute bucket deleted (older than any
    // window) leaves its hour alone: such hours are past every window and pruned by age as well.
    sql: [
      `CREATE TABLE budget_window_spend_hour (
        spend_id BIGINT NOT NULL REFERENCES budget_spend (id) ON DELETE CASCADE,
        hour BIGINT NOT NULL,
        spent_usd DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (spend_id, hour)
      )`,
      'CREATE INDEX budget_window_spend_hour_hour ON budget_window_spend_hour (hour)',
      `INSERT INTO budget_window_spend_hour (spend_id, hour, spent_usd)
       SELECT spend_id, minute - minute % 3600000, SUM(spent_usd) FROM budget_window_spend GROUP BY 1, 2`,
      `CREATE FUNCTION burnrate_window_hour() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         INSERT INTO budget_window_spend_hour (spend_id, hour, spent_usd)
         VALUES (NEW.spend_id, NEW.minute - NEW.minute % 3600000, NEW.spent_usd - CASE WHEN TG_OP = 'UPDATE' THEN OLD.spent_usd ELSE 0 END)
         ON CONFLICT (spend_id, hour) DO UPDATE SET spent_usd = budget_window_spend_hour.spent_usd + excluded.spent_usd;
         RETURN NULL;
       END $$`,
      `CREATE TRIGGER budget_window_spend_hour AFTER INSERT OR UPDATE OF spent_usd ON budget_window_spend
       FOR EACH ROW EXECUTE FUNCTION burnrate_window_hour()`,
      // The buckets whose minute ends after the edge (minute + 60000 > edge, as before): the
      // minutes before the first whole hour after it, then the hours. Both ranges use the keys.
      `CREATE OR REPLACE FUNCTION burnrate_window_spent(sid BIGINT, edge DOUBLE PRECISION) RETURNS DOUBLE PRECISION
        LANGUAGE sql VOLATILE AS $$
        SELECT COALESCE((SELECT SUM(m.spent_usd) FROM budget_window_spend m WHERE m.spend_id = sid AND m.minute > b.e AND m.minute < b.h0), 0)::float8
             + COALESCE((SELECT SUM(h.spent_usd) FROM budget_window_spend_hour h WHERE h.spend_id = sid AND h.hour >= b.h0), 0)::float8
          FROM (SELECT floor(edge - 60000)::bigint AS e, (floor((floor(edge - 60000) + 3600000) / 3600000) * 3600000)::bigint AS h0) b
      $$`,
    ],
  },
  {
    version: 13,
    description: 'settlements written, by reservation id: a settlement retried after its answer was lost adds its cost once',
    // Kept for a week (the lease sweep deletes older ones): a retry comes within seconds.
    sql: [
      `CREATE TABLE budget_settled (
        rid TEXT PRIMARY KEY,
        at TIMESTAMPTZ NOT NULL DEFAULT now()
      )`,
      'CREATE INDEX budget_settled_at ON budget_settled (at)',
    ],
  },
  {
    version: 14,
    description: 'a settlement that added a cost keeps its marker until its call is stored: a call stored late is not counted twice',
    // `owed`: written by a settlement that added a cost, whose call is not stored yet (it skips
    // the settlement's rows whenever it comes, so the marker is not swept until then).
    // `by_call`: written by the storing of the call, before its settlement (which then adds none).
    // Markers written before this migration are neither, and swept after a week as before.
    sql: [
      'ALTER TABLE budget_settled ADD COLUMN owed BOOLEAN NOT NULL DEFAULT false, ADD COLUMN by_call BOOLEAN NOT NULL DEFAULT false',
    ],
  },
]
