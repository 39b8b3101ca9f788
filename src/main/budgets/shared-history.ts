import type { CallRecord } from '../ledger/record'
import { SPEND_SQL, type StoredSpend } from '../ledger/spend'
import type { CallLedger } from '../ledger/types'
import type { SqlStore } from '../storage/sql'
import { parseSnapshot, type Snapshot } from './feed/snapshot'
import type { KeyCount } from './key-registry'
import type { HistoryRow } from './meter-book'

/** The recorded calls the meters start from, per minute, as SQLite's: money only (no plan usage), and no call a team server ingested. */
export const HISTORY_SQL = `SELECT api_key_hash, MAX(key_hint) AS key_hint, provider, model, requested_model AS requested, agent, tenant, session,
       (ts / 60000) * 60000 AS t, SUM(CASE WHEN billing = 'subscription' THEN 0 ELSE cost_usd END) AS cost, SUM(input_tokens + output_tokens) AS tokens, MAX(ts) AS last
  FROM calls WHERE ts >= @since AND origin_id IS NULL GROUP BY api_key_hash, provider, model, requested_model, agent, tenant, session, (ts / 60000) * 60000`

/**
 * The spend before @since of the sessions still remembered (a call since @active), per key,
 * scope and session, as one row at the minute of its last call (before @since: it counts in the
 * session only, never in a calendar period or window). A session cap counts the whole session,
 * which can have begun long before the month. Only the calls of those sessions are read, by the
 * calls_session_ts index (`session <> ''` lets the partial index serve).
 */
export const SESSION_HISTORY_SQL = `SELECT api_key_hash, MAX(key_hint) AS key_hint, provider, model, requested_model AS requested, agent, tenant, session,
       (MAX(ts) / 60000) * 60000 AS t, SUM(CASE WHEN billing = 'subscription' THEN 0 ELSE cost_usd END) AS cost, 0 AS tokens, MAX(ts) AS last
  FROM calls
 WHERE session IN (SELECT DISTINCT session FROM calls WHERE ts >= @active AND session <> '' AND origin_id IS NULL)
   AND session <> '' AND ts < @since AND origin_id IS NULL
 GROUP BY api_key_hash, provider, model, requested_model, agent, tenant, session`

/**
 * This month's keys, for the key registry. A key's tenant is its newest call's, as the registry
 * keeps it live (KeyRegistry.count; the latest recorded of calls at the same ms): MAX(tenant) gave
 * a key used by two tenants the one named last, and that tenant's budgets view showed it unused.
 * The newest call is looked up once per key, by (ts) on SQLite and by (api_key_hash, ts) on
 * PostgreSQL, after one pass over the month: no sort of the month's calls.
 */
export const KEYS_SQL = `SELECT k.api_key_hash, k.key_hint, k.requests, k.last_ts,
       (SELECT c.tenant FROM calls c WHERE c.ts = k.last_ts AND c.api_key_hash = k.api_key_hash AND c.origin_id IS NULL ORDER BY c.id DESC LIMIT 1) AS tenant
  FROM (SELECT api_key_hash, MAX(key_hint) AS key_hint, COUNT(*) AS requests, MAX(ts) AS last_ts
          FROM calls WHERE ts >= @since AND origin_id IS NULL GROUP BY api_key_hash) k`

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

  /**
   * Reads the calls since `since` (this instance's held calls written first); resolves with the
   * snapshot they were read in (one transaction, repeatable read: the calls of every transaction
   * visible in it are in the rows), which of the calls `counted` gives (this instance's, counted
   * while the read was under way) are in them, today's and this month's spend per key, and (with
   * `keysSince`) the keys with calls since then.
   */
  async load(
    since: number,
    counted: () => readonly CallRecord[] = () => [],
    keysSince?: number,
    sessionsSince: number | null = null,
  ): Promise<{ snapshot: Snapshot; read: Set<string>; spend: StoredSpend[]; keys: KeyCount[] | null }> {
    await this.ledger.flushed()
    const { rows, snapshot, read, spend, keys } = await this.store.transaction(async (tx) => {
      await tx.run('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ')
      // The first query takes the transaction's snapshot; the history is read in the same one.
      const snap = await tx.get<{ s: string }>('SELECT pg_current_snapshot()::text AS s')
      const rows = await tx.all<HistoryRow>(HISTORY_SQL, { since })
      if (sessionsSince !== null) rows.push(...(await tx.all<HistoryRow>(SESSION_HISTORY_SQL, { since, active: sessionsSince })))
      // Which of the calls this instance counted meanwhile are in what was read.
      const callKeys = counted().flatMap((c) => (c.call_key ? [c.call_key] : []))
      const found = callKeys.length === 0 ? [] : await tx.all<{ call_key: string }>('SELECT call_key FROM calls WHERE call_key = ANY(@keys::text[])', { keys: callKeys })
      // Today's and this month's spend (the tray, `burnrate_spend_usd`) from the same calls.
      const spend = await tx.all<StoredSpend>(SPEND_SQL, this.ledger.spend.periods())
      // And this month's keys (the key registry), when asked.
      const keys = keysSince === undefined ? null : await tx.all<KeyCount>(KEYS_SQL, { since: keysSince })
      return { snapshot: parseSnapshot(snap!.s), rows, read: new Set(found.map((f) => f.call_key)), spend, keys }
    })
    this.rows = rows
    return { snapshot, read, spend, keys }
  }
}
