import type Database from 'better-sqlite3'

/** Grains of the rollup tables, in ms. Buckets start at multiples of the grain since the epoch (UTC). */
export const FIVE_MIN = 300_000
export const HOUR = 3_600_000
export const DAY = 86_400_000

/** The totals table and the per-grouping table of each grain that has them, coarsest first. */
export const TIERS = [
  { grain: DAY, totals: 'dash_day', dims: 'dash_dim_day' },
  { grain: HOUR, totals: 'dash_hour', dims: 'dash_dim_hour' },
] as const
export type Tier = (typeof TIERS)[number]

function totalsTable(name: string): string {
  return `
    CREATE TABLE ${name} (
      bucket INTEGER NOT NULL,
      tenant TEXT NOT NULL,
      requests INTEGER NOT NULL,
      failed INTEGER NOT NULL,
      errors_429 INTEGER NOT NULL,
      errors_5xx INTEGER NOT NULL,
      cost_usd REAL NOT NULL,
      input_tokens INTEGER NOT NULL,
      output_tokens INTEGER NOT NULL,
      cache_read_tokens INTEGER NOT NULL,
      cache_write_tokens INTEGER NOT NULL,
      latency_ms REAL NOT NULL,
      latency_hist BLOB NOT NULL,
      PRIMARY KEY (bucket, tenant)
    );
    CREATE INDEX ${name}_tenant ON ${name} (tenant, bucket);`
}

function dimsTable(name: string): string {
  return `
    CREATE TABLE ${name} (
      dim TEXT NOT NULL,
      bucket INTEGER NOT NULL,
      tenant TEXT NOT NULL,
      key TEXT NOT NULL,
      provider TEXT NOT NULL,
      key_hint TEXT NOT NULL,
      requests INTEGER NOT NULL,
      input_tokens INTEGER NOT NULL,
      output_tokens INTEGER NOT NULL,
      cache_read_tokens INTEGER NOT NULL,
      cache_write_tokens INTEGER NOT NULL,
      cost_usd REAL NOT NULL,
      PRIMARY KEY (dim, bucket, tenant, key, provider)
    ) WITHOUT ROWID;
    CREATE INDEX ${name}_tenant ON ${name} (dim, tenant, bucket);`
}

/**
 * Pre-aggregated copies of `calls`, kept in step by the ledger's batch writer (same
 * transaction), so dashboard reads touch days and hours instead of calls:
 * - dash_5m: per 5 minutes and tenant, what the short timeseries draw.
 * - dash_hour, dash_day: per hour (day) and tenant, every total the summary and stats need,
 *   with a latency histogram.
 * - dash_dim_hour, dash_dim_day: per hour (day), tenant and one grouping (model, provider,
 *   agent, session, api_key), for costs.
 * - dash_session: per named session (tenant, agent, session), its first/last call, requests and cost.
 * - dash_state: the id of the last call the rollups include (a server that ran without the
 *   writer is caught up from there at start-up).
 * Plus the indexes on `calls` that the costliest-calls list needs.
 */
export function createRollupTables(db: Database.Database): void {
  db.exec(`
    CREATE TABLE dash_5m (
      bucket INTEGER NOT NULL,
      tenant TEXT NOT NULL,
      requests INTEGER NOT NULL,
      cost_usd REAL NOT NULL,
      input_tokens INTEGER NOT NULL,
      output_tokens INTEGER NOT NULL,
      PRIMARY KEY (bucket, tenant)
    ) WITHOUT ROWID;
    CREATE INDEX dash_5m_tenant ON dash_5m (tenant, bucket);
    ${TIERS.map((t) => totalsTable(t.totals) + dimsTable(t.dims)).join('\n')}

    CREATE TABLE dash_session (
      tenant TEXT NOT NULL,
      agent TEXT NOT NULL,
      session TEXT NOT NULL,
      first_ts INTEGER NOT NULL,
      last_ts INTEGER NOT NULL,
      requests INTEGER NOT NULL,
      cost_usd REAL NOT NULL,
      PRIMARY KEY (tenant, agent, session)
    ) WITHOUT ROWID;
    CREATE INDEX dash_session_last ON dash_session (last_ts);
    CREATE INDEX dash_session_tenant_last ON dash_session (tenant, last_ts);

    CREATE TABLE dash_state (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      last_call_id INTEGER NOT NULL
    );
    INSERT INTO dash_state (id, last_call_id) VALUES (1, 0);

    CREATE INDEX calls_cost ON calls (cost_usd);
    CREATE INDEX calls_tenant_cost ON calls (tenant, cost_usd);
  `)
}
