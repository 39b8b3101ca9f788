import type { CallLedger } from '../ledger/types'
import type { SqlStore } from '../storage/sql'
import type { HistoryRow } from './engine'

/** The recorded calls the meters start from, per minute, as SQLite's: money only (no plan usage), and no call a team server ingested. */
export const HISTORY_SQL = `SELECT api_key_hash, MAX(key_hint) AS key_hint, provider, model, requested_model AS requested, agent, tenant, session,
       (ts / 60000) * 60000 AS t, SUM(CASE WHEN billing = 'subscription' THEN 0 ELSE cost_usd END) AS cost, SUM(input_tokens + output_tokens) AS tokens, MAX(ts) AS last
  FROM calls WHERE ts >= @since AND origin_id IS NULL GROUP BY api_key_hash, provider, model, requested_model, agent, tenant, session, (ts / 60000) * 60000`

/** This month's keys, for the key registry. */
export const KEYS_SQL = `SELECT api_key_hash, MAX(key_hint) AS key_hint, MAX(tenant) AS tenant, COUNT(*) AS requests, MAX(ts) AS last_ts
  FROM calls WHERE ts >= @since AND origin_id IS NULL GROUP BY api_key_hash`

/**
 * PG mode: the in-process meters (warnings, rate limits, rolling windows, alerts and budget
 * listings) start from every instance's calls in PostgreSQL. The engine loads history
 * synchronously, so the rows are read ahead (at start-up and after a rule change) and handed
 * to it from here.
 */
export class SharedHistory {
  rows: HistoryRow[] = []

  constructor(
    private readonly store: SqlStore,
    private readonly ledger: CallLedger,
  ) {}

  /** Reads the calls since `since` (this instance's held calls written first). */
  async load(since: number): Promise<void> {
    await this.ledger.flushed()
    this.rows = await this.store.all<HistoryRow>(HISTORY_SQL, { since })
  }

  async keys(since: number) {
    return this.store.all<{ api_key_hash: string; key_hint: string; tenant: string; requests: number; last_ts: number }>(KEYS_SQL, { since })
  }
}
