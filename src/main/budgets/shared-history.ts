import type { CallRecord } from '../ledger/record'
import { FREE_ENDPOINTS } from '../providers/free-endpoints'
import { SPEND_SQL, type StoredSpend } from '../ledger/spend'
import type { CallLedger } from '../ledger/types'
import type { SqlStore } from '../storage/sql'
import type { PeriodClock } from '../time/zone'
import { parseSnapshot, type Snapshot } from './feed/snapshot'
import { LOOP_REASON, RATE_REASON, REFUSAL_REASON } from './gate'
import type { KeyCount } from './key-registry'
import type { HistoryRow } from './meter-book'

/** The recorded calls the meters start from, per minute, as SQLite's: money only (no plan usage), and no call a team server ingested. */
export const HISTORY_SQL = `SELECT api_key_hash, MAX(key_hint) AS key_hint, provider, model, requested_model AS requested, agent, tenant, session,
       (ts / 60000) * 60000 AS t, SUM(CASE WHEN billing = 'subscription' THEN 0 ELSE cost_usd END) AS cost, 0 AS tokens, 0 AS requests, MAX(ts) AS last
  FROM calls WHERE ts >= @since AND origin_id IS NULL GROUP BY api_key_hash, provider, model, requested_model, agent, tenant, session, (ts / 60000) * 60000`

/** How long before the last minute a call may have arrived and still have ended in it (its tokens count when it ended). */
export const LONGEST_CALL_MS = 3600_000

const sqlList = (values: readonly string[]) => values.map((v) => `'${v.replace(/'/g, "''")}'`).join(', ')

/**
 * The last minute's per-minute counts, as the meters kept them before a restart or rule change
 * (the ledger has when each call arrived and how long it ran): the requests the proxy admitted
 * since @minute (stamped when they arrived; not Burnrate's own refusals, nor reads and cancels of
 * what is already billed, which no rule counts, nor calls imported from agents' logs), and the tokens of the calls that ended since @minute
 * (stamped when they ended; a call that arrived up to LONGEST_CALL_MS before), per key, scope and
 * second, in time order; neither counts a Batch API request stored from its results file
 * (`batch.*`: money only). `t` and `cost` are 0: the money is in HISTORY_SQL's rows.
 */
export const RECENT_SQL = `SELECT api_key_hash, MAX(key_hint) AS key_hint, provider, model, requested_model AS requested, agent, tenant, '' AS session,
       0 AS t, 0 AS cost, 0 AS tokens, COUNT(*) AS requests, MAX(ts) AS last
  FROM calls
 WHERE ts > @minute AND origin_id IS NULL AND source = 'proxy'
   AND (error IS NULL OR error NOT IN (${sqlList([REFUSAL_REASON, RATE_REASON, LOOP_REASON])}))
   AND endpoint NOT IN (${sqlList(FREE_ENDPOINTS)}) AND endpoint NOT LIKE 'batch.%'
 GROUP BY api_key_hash, provider, model, requested_model, agent, tenant, ts / 1000
UNION ALL
SELECT api_key_hash, MAX(key_hint) AS key_hint, provider, model, requested_model AS requested, agent, tenant, '' AS session,
       0 AS t, 0 AS cost, SUM(input_tokens + output_tokens) AS tokens, 0 AS requests, MAX(ts + CAST(latency_ms AS INTEGER)) AS last
  FROM calls
 WHERE ts > @arrived AND ts + CAST(latency_ms AS INTEGER) > @minute AND origin_id IS NULL AND input_tokens + output_tokens > 0
   AND endpoint NOT LIKE 'batch.%'
 GROUP BY api_key_hash, provider, model, requested_model, agent, tenant, (ts + CAST(latency_ms AS INTEGER)) / 1000
 ORDER BY last`

/** RECENT_SQL's parameters for a read at `now`. */
export function recentParams(now: number): { minute: number; arrived: number } {
  return { minute: now - 60_000, arrived: now - 60_000 - LONGEST_CALL_MS }
}

/**
 * The spend before @since of the sessions still remembered (a call since @active), per key,
 * scope and session, as one row at the minute of its last call (before @since: it counts in the
 * session only, never in a calendar period or window). A session cap counts the whole session,
 * which can have begun long before the month. Only the calls of those sessions are read, by the
 * calls_session_ts index (`session <> ''` lets the partial index serve).
 */
export const SESSION_HISTORY_SQL = `SELECT api_key_hash, MAX(key_hint) AS key_hint, provider, model, requested_model AS requested, agent, tenant, session,
       (MAX(ts) / 60000) * 60000 AS t, SUM(CASE WHEN billing = 'subscription' THEN 0 ELSE cost_usd END) AS cost, 0 AS tokens, 0 AS requests, MAX(ts) AS last
  FROM calls
 WHERE session IN (SELECT DISTINCT session FROM calls WHERE ts >= @active AND session <> '' AND origin_id IS NULL)
   AND session <> '' AND ts < @since AND origin_id IS NULL
 GROUP BY api_key_hash, provider, model, requested_model, agent, tenant, session`

/**
 * This month's keys, for the key registry: their calls from @since to @next (the month's start and
 * the next month's), and apart, by time, those stamped from @next on (ahead of the clock: a team
 * member's running fast, an agent's log imported from such a machine), which the registry counts
 * in their own month when it comes (KeyRegistry.seed), as it counts them live. Read from @since on
 * with no end, they were this month's requests, then none of the next month's until a restart.
 * A key's tenant is its newest call's, as the registry
 * keeps it live (KeyRegistry.count; the latest recorded of calls at the same ms): MAX(tenant) gave
 * a key used by two tenants the one named last, and that tenant's budgets view showed it unused.
 * Of its calls still requests, as its count and last time: an imported call the proxy's record
 * superseded, stored after another call of the key at the same ms, gave the key its tenant
 * (KeyRegistry.uncount keeps the other's live).
 * The newest call is looked up once per row, by (ts) on SQLite and by (api_key_hash, ts) on
 * PostgreSQL, after one pass over the month: no sort of the month's calls.
 */
export const KEYS_SQL = `SELECT k.api_key_hash, k.key_hint, k.requests, k.last_ts,
       (SELECT c.tenant FROM calls c WHERE c.ts = k.last_ts AND c.api_key_hash = k.api_key_hash AND c.origin_id IS NULL AND c.superseded_by IS NULL ORDER BY c.id DESC LIMIT 1) AS tenant
  FROM (SELECT api_key_hash, MAX(key_hint) AS key_hint, COUNT(*) AS requests, MAX(ts) AS last_ts
          FROM calls WHERE ts >= @since AND ts < @next AND origin_id IS NULL AND superseded_by IS NULL GROUP BY api_key_hash
        UNION ALL
        SELECT api_key_hash, MAX(key_hint) AS key_hint, COUNT(*) AS requests, ts AS last_ts
          FROM calls WHERE ts >= @next AND origin_id IS NULL AND superseded_by IS NULL GROUP BY api_key_hash, ts) k`

/** KEYS_SQL's parameters for the month of `at` in `clock`'s zone. */
export function keysParams(clock: PeriodClock, at: number): { since: number; next: number } {
  const month = clock.monthOf(at)
  return { since: month.start, next: month.end }
}

/**
 * PG mode: the in-process meters (warnings, rate limits, rolling windows, alerts and budget
 * listings) start from every instance's calls in PostgreSQL. The engine loads history
 * synchronously, so the rows are read ahead (at start-up and after a rule change) and handed
 * to it from here.
 */
export class SharedHistory {
  constructor(
    private readonly store: SqlStore,
    private readonly ledger: CallLedger,
  ) {}

  /**
   * Reads the calls since `since` (this instance's held calls written first); resolves with the
   * snapshot they were read in (one transaction, repeatable read: the calls of every transaction
   * visible in it are in the rows), which of the calls `counted` gives (this instance's, counted
   * while the read was under way) are in them, today's and this month's spend per key as of
   * `spentAt`, and (with `keys`) the keys with calls in the month of `keys.clock` at `keysAt`.
   */
  async load(
    since: number,
    counted: () => readonly CallRecord[] = () => [],
    keysOf?: { clock: PeriodClock; readAt: (now: number) => number },
    sessionsSince: number | null = null,
  ): Promise<{ rows: HistoryRow[]; snapshot: Snapshot; read: Set<string>; spend: StoredSpend[]; spentAt: number; keys: KeyCount[] | null; keysAt: number }> {
    await this.ledger.flushed()
    return this.store.transaction(async (tx) => {
      await tx.run('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ')
      // The first query takes the transaction's snapshot; the history is read in the same one.
      const snap = await tx.get<{ s: string }>('SELECT pg_current_snapshot()::text AS s')
      const rows = await tx.all<HistoryRow>(HISTORY_SQL, { since })
      if (sessionsSince !== null) rows.push(...(await tx.all<HistoryRow>(SESSION_HISTORY_SQL, { since, active: sessionsSince })))
      // The last minute's requests and tokens, after the money (in time order).
      rows.push(...(await tx.all<HistoryRow>(RECENT_SQL, recentParams(Date.now()))))
      // Which of the calls this instance counted meanwhile are in what was read.
      const callKeys = counted().flatMap((c) => (c.call_key ? [c.call_key] : []))
      const found = callKeys.length === 0 ? [] : await tx.all<{ call_key: string }>('SELECT call_key FROM calls WHERE call_key = ANY(@keys::text[])', { keys: callKeys })
      // Today's and this month's spend (the tray, `burnrate_spend_usd`) from the same calls, as of
      // `spentAt`: the day they are kept as (`spend.replace`), though midnight passes before that.
      // Taken after the snapshot: no call it holds was recorded after `spentAt`, yet one may be
      // stamped in a later day or month (ahead of the clock: a team member's running fast, an
      // imported log's): SPEND_SQL reads those apart by their stamps, and the totals keep them for
      // their own day and month (as KEYS_SQL and the key registry do for their month). Never a day
      // before the one the totals have rolled into (the wall clock stepped back across midnight):
      // a period never goes back (SpendTracker.readAt).
      const spentAt = this.ledger.spend.readAt(Date.now())
      const spend = await tx.all<StoredSpend>(SPEND_SQL, this.ledger.spend.periods(spentAt))
      // And this month's keys (the key registry), when asked: the month of `keysAt`, the one they
      // are counted in (`KeyRegistry.reseed`): `spentAt`'s, or the later one the registry has
      // already rolled into (a clock stepped back across the month's end; a key's first call of the
      // month at $0 leaves the spend totals where they were). The month the read began in held the
      // new month's calls too when it ended before the snapshot, and they were all counted in it.
      const keysAt = keysOf === undefined ? spentAt : keysOf.readAt(spentAt)
      const keys = keysOf === undefined ? null : await tx.all<KeyCount>(KEYS_SQL, keysParams(keysOf.clock, keysAt))
      return { snapshot: parseSnapshot(snap!.s), rows, read: new Set(found.map((f) => f.call_key)), spend, spentAt, keys, keysAt }
    })
  }
}
