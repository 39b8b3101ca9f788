import type { SqlParams, SqlStore } from '../../../storage/sql'
import { MAX_WINDOW_HOURS } from '../../check'
import { type PeriodState, SESSION_MEMORY_MS } from '../../meter'
import { MINUTE } from '../../meter-counters'
import type { ReserveRequest } from '../types'
import { lockKeyForSeed } from './call-spend'
import type { Limiter } from './limiter'
import { NOW_MS, rowKey, scopeSql, spendStart, windowLength } from './sql'


/**
 * A session's calls: all of them, however long ago the session began (a session cap counts it
 * whole), found by the calls_session_ts index (`session <> ''` lets the partial index serve); a
 * session idle for SESSION_MEMORY_MS is forgotten, as the meters forget it (its seed is 0).
 */
const SESSION_CALLS = " AND session = @session AND session <> ''"

/**
 * The spend rows (`budget_spend`) a call is admitted against. A row is created (INSERT … ON
 * CONFLICT DO NOTHING) the first time any instance needs it, seeded from the calls already in
 * the `calls` table for that key, scope and period; from then on every call stored adds its cost
 * to it (call-spend.ts). Rows this instance knows exist cost no statement on the hot path.
 */
export class SpendRows {
  /** Spend rows this instance knows exist (no seed INSERT on the hot path). */
  private known = new Set<string>()
  private readonly seeding = new Map<string, Promise<void>>()

  constructor(
    private readonly store: SqlStore,
    private readonly db: Limiter,
  ) {}

  /** Makes sure the call's row exists for each of `periods`. */
  async ensure(rk: string, req: ReserveRequest, periods: PeriodState[]): Promise<void> {
    for (const p of periods) {
      const k = rowKey(rk, req.keyHash, p, req.session)
      if (this.known.has(k)) continue
      // Calls arriving together for a new row share one INSERT.
      let seeding = this.seeding.get(k)
      if (!seeding) {
        seeding = this.seed(rk, req, p).then(
          () => {
            if (this.known.size > 50_000) this.known = new Set()
            this.known.add(k)
          },
        ).finally(() => this.seeding.delete(k))
        this.seeding.set(k, seeding)
      }
      await seeding
    }
  }

  /** The row was found missing (deleted behind this instance's back): the next `ensure` creates it again. */
  forget(k: string): void {
    this.known.delete(k)
  }

  /**
   * Creates a spend row (if no instance has yet), from the calls already recorded for its key,
   * scope and period: a calendar row from its period's calls alone (from its start to its end),
   * as it may be created after its period ended (a call stamped before midnight decided after it),
   * when the next period's calls are already in `calls`.
   */
  private async seed(rk: string, req: ReserveRequest, p: PeriodState): Promise<void> {
    if (p.period === 'window') return this.seedWindow(rk, req, p)
    const session = p.period === 'session'
    const params: SqlParams = {
      rk,
      key: req.keyHash,
      period: p.period,
      start: session ? 0 : p.start,
      session: session ? req.session : '',
      since: session ? 0 : p.start,
    }
    if (session) params.idle = Date.now() - SESSION_MEMORY_MS
    else params.until = periodEnd(p)
    const scope = scopeSql(req.rule, params)
    // Its own transaction, under the key's lock taken exclusively first (call-spend.ts): the
    // calls of every batch committed before the lock was granted are in the sum (the INSERT's
    // snapshot is taken after it), and every batch after it adds its calls to the new row.
    await this.db.run(() => this.store.transaction(async (tx) => {
      await lockKeyForSeed(tx, req.keyHash)
      await tx.run(
      `INSERT INTO budget_spend (rule_key, api_key_hash, period, period_start, session, spent_usd, reserved_usd, created_at)
       SELECT @rk, @key, @period, @start, @session, ${session ? 'COALESCE(CASE WHEN MAX(ts) >= @idle THEN SUM(cost_usd) END, 0)' : 'COALESCE(SUM(cost_usd), 0)'}, 0, ${NOW_MS} FROM calls
        WHERE api_key_hash = @key AND ts >= @since${session ? '' : ' AND ts < @until'} AND billing <> 'subscription' AND origin_id IS NULL${session ? SESSION_CALLS : ''}${scope}
       ON CONFLICT (rule_key, api_key_hash, period, period_start, session) DO NOTHING`,
        params,
      )
    }))
  }

  /**
   * Creates a rolling window's spend row (if no instance has yet) and, in the same statement, its
   * per-minute buckets from the calls already recorded for its key and scope that arrived in the
   * window as the call sees it (a bucket counts while its minute + 1 min is after the call's
   * arrival minus the window's length: MinuteRing's edge). Calls ingested from team members are
   * left out, as the meters' history leaves them out (README: Team).
   */
  private async seedWindow(rk: string, req: ReserveRequest, p: PeriodState): Promise<void> {
    const params: SqlParams = { rk, key: req.keyHash, start: spendStart(p), edge: req.ts - windowLength(p) - MINUTE }
    const scope = scopeSql(req.rule, params)
    // Under the key's seed lock, as the calendar rows (above): no call stored meanwhile is missed or counted twice.
    await this.db.run(() => this.store.transaction(async (tx) => {
      await lockKeyForSeed(tx, req.keyHash)
      await tx.run(
      `WITH made AS (
         INSERT INTO budget_spend (rule_key, api_key_hash, period, period_start, session, spent_usd, reserved_usd, created_at)
         VALUES (@rk, @key, 'window', @start, '', 0, 0, ${NOW_MS})
         ON CONFLICT (rule_key, api_key_hash, period, period_start, session) DO NOTHING
         RETURNING id
       )
       INSERT INTO budget_window_spend (spend_id, minute, spent_usd)
       SELECT made.id, c.minute, SUM(c.cost_usd)
         FROM made, (SELECT ts - ts % ${MINUTE} AS minute, cost_usd FROM calls
                      WHERE api_key_hash = @key AND ts > @edge::float8 AND billing <> 'subscription' AND origin_id IS NULL${scope}) c
        GROUP BY made.id, c.minute
       HAVING SUM(c.cost_usd) <> 0`,
        params,
      )
    }))
  }
}

/** A calendar period's end (its reset), where its row stops counting calls. */
function periodEnd(p: PeriodState): number {
  if (p.resetsAt === null) throw new Error(`a ${p.period} period without its end`)
  return p.resetsAt
}

/** Buckets older than the longest window a rule may have (MAX_WINDOW_HOURS) plus this are deleted. */
export const PRUNE_MARGIN_MS = 24 * 3600_000

/** Deletes the window buckets no window can count any more (older than 744 h plus a day, on the database's clock): minutes, then hours. */
export async function pruneWindowBuckets(store: SqlStore): Promise<number> {
  const age = MAX_WINDOW_HOURS * 3600_000 + PRUNE_MARGIN_MS
  const minutes = await store.run(`DELETE FROM budget_window_spend WHERE minute < ${NOW_MS} - @age::bigint`, { age })
  await store.run(`DELETE FROM budget_window_spend_hour WHERE hour < ${NOW_MS} - @age::bigint`, { age })
  return minutes
}
