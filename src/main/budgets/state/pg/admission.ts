import { randomUUID } from 'node:crypto'
import { isConflict } from '../../../storage/conflict'
import type { SqlParams, SqlStore } from '../../../storage/sql'
import { type PeriodState, latestReset } from '../../meter'
import { minuteOf, windowResetsAt } from '../../meter-counters'
import type { ReserveOutcome, ReserveRequest } from '../types'
import type { Limiter } from './limiter'
import type { Settlements } from './settlements'
import type { SpendRows } from './spend-rows'
import { EPS, NOW_MS, bindPeriod, ruleKey, rowKey, rulePatternPrefix, windowLength } from './sql'
import { reached as hasReached, reachedAt } from '../../reached'

/** How long a limit the database said is reached refuses without asking it again (re-pricing can lower spend). */
export const REACHED_TTL_MS = 5000

/** One spend row's answer to the admission statement. */
interface Answer {
  id: number
  period: string
  spent_usd: number
  reserved_usd: number
  /** The row admitted the call and holds its reservation. */
  took: boolean
}

/**
 * Atomic admission: ONE conditional UPDATE … RETURNING over a call's spend rows (its calendar
 * periods, rolling window and session) checks and reserves on each row in the database, with the same test the
 * in-process state makes (README: Budgets → overshoot), so N instances admit together exactly as
 * one instance would. The reservation is recorded with this instance's lease; a refusal names
 * the period that refused and its figures.
 */
export class Admission {
  /**
   * Spend rows the database said are at their limit: their spend, when it was read and when the
   * limit resets. A calendar period's or a session's spend only grows by calls, so the answer
   * stands without a round trip; but re-pricing (on any instance) can lower it, so it is asked
   * again after REACHED_TTL_MS. A window's spend falls as time passes: its entry only says it is
   * reached until its reset, so that a refusal naming another limit is not given while the window
   * would free later.
   */
  private readonly reached = new Map<string, { spent: number; at: number; resetsAt: number | null }>()

  constructor(
    private readonly store: SqlStore,
    private readonly db: Limiter,
    private readonly rows: SpendRows,
    private readonly settlements: Settlements,
    private readonly instance: string,
    private readonly leaseMs: number,
  ) {}

  /**
   * Admits the call on every one of `periods` and reserves on each, or refuses. `force`: reserves
   * without the test (a background response's reservation held again after a restart).
   */
  async reserve(req: ReserveRequest, periods: PeriodState[], retry = 0, force = false, signal?: AbortSignal, held = 0): Promise<ReserveOutcome> {
    const rk = ruleKey(req.rule)
    // Once the database said a calendar period or a session reached this limit, the answer stands
    // for a while (no round trip to refuse each call of an agent that keeps trying), naming the
    // limit reached that frees last. A window's spend falls as time passes: when it is the one
    // that frees last, the database is asked for its figures.
    const now = Date.now()
    const known: PeriodState[] = []
    for (const p of periods) {
      const k = rowKey(rk, req.keyHash, p, req.session)
      const r = this.reached.get(k)
      if (r === undefined) continue
      if (now - r.at >= REACHED_TTL_MS || (p.period === 'window' && r.resetsAt! <= req.ts)) this.reached.delete(k)
      else if (hasReached(r.spent, p.limit) && !force) known.push({ ...p, spent: r.spent, resetsAt: p.period === 'window' ? r.resetsAt : p.resetsAt })
    }
    const cached = latestReset(known)
    if (cached && cached.period !== 'window') return { ok: false, kind: 'reached', state: cached, reservedUsd: 0, worstCaseUsd: 0 }
    signal?.throwIfAborted()
    await this.rows.ensure(rk, req, periods)
    const rid = randomUUID()
    // `held`: this instance's calls of the key in flight that were admitted in process while the
    // database was away, whose reservations it never saw: counted as reserved until they end.
    const params: SqlParams = { rk, rkp: rulePatternPrefix(req.rule), key: req.keyHash, x: req.amount, rid, me: this.instance, lease: this.leaseMs, eps: EPS, h: held }
    const hasWindow = periods.some((p) => p.period === 'window')
    const values = periods.map((p, i) => {
      bindPeriod(params, i, p, req.session)
      // The statement's limit is where spend counts as reaching it (../../reached.ts).
      params[`l${i}`] = reachedAt(p.limit)
      if (!hasWindow) return `(@p${i}::text, @s${i}::bigint, @n${i}::text, @l${i}::float8)`
      // A window's edge: its buckets count while minute + 1 min > the call's arrival - length.
      params[`e${i}`] = p.period === 'window' ? req.ts - windowLength(p) : null
      return `(@p${i}::text, @s${i}::bigint, @n${i}::text, @l${i}::float8, @e${i}::float8)`
    })
    // The same test as the in-process state: `expected` admits while settled spend plus what is
    // in flight is under the limit; `max_tokens` while the worst case fits in what is left.
    const admits = force
      ? 'TRUE'
      : `(b.spent_usd < w.lim AND ${
          req.rule.reserve === 'max_tokens'
            ? `(@x::float8 <= 0 OR @x::float8 <= w.lim - b.spent_usd - CASE WHEN w.period = 'session' THEN 0 ELSE b.reserved_usd + @h::float8 END)`
            : `(b.reserved_usd + @h::float8 <= @eps::float8 OR w.period = 'session' OR b.spent_usd + b.reserved_usd + @h::float8 < w.lim)`
        })`
    params.n = periods.length
    this.settlements.hold(rid)
    let rows: Answer[]
    try {
      // One round trip: lock the call's rows, and the key's rows of its rule before an edit
      // (rowLocks), in id order (no deadlock between instances; the locked values are the latest
      // and cannot move until this statement ends), reserve on all
      // of them only if every one admits, record the reservation with its lease, and answer with
      // each row's figures (what a refusal names).
      //
      // A window row's spend is the sum of its buckets in the window, read once the row is locked
      // by burnrate_window_spent (migration 6): a VOLATILE function reads with a fresh snapshot,
      // where a subquery here would read with the statement's, taken before waiting for the lock,
      // and miss the buckets of a settlement that committed meanwhile (its reservation already
      // freed on the row as re-read). Every write of buckets holds the row's lock to its commit.
      // Not sent once the call stopped waiting for it (the statement queued here meanwhile).
      rows = await this.db.run(() => {
        signal?.throwIfAborted()
        return this.store.all<Answer>(
          `WITH want (period, start, session, lim${hasWindow ? ', edge' : ''}) AS (VALUES ${values.join(', ')}),
                ${hasWindow ? lockWithWindow(admits) : lockCalendar(admits)},
                verdict AS (SELECT COUNT(*) = @n::int AND bool_and(ok) AS ok FROM locked),
                upd AS (
                  UPDATE budget_spend b SET reserved_usd = b.reserved_usd + @x::float8
                   WHERE b.id IN (SELECT id FROM locked) AND (SELECT ok FROM verdict)
                  RETURNING b.id
                ),
                ins AS (
                  INSERT INTO budget_reservations (id, spend_id, amount_usd, instance, expires_at)
                  SELECT @rid, id, @x::float8, @me, ${NOW_MS} + @lease FROM upd
                )
           SELECT l.id, l.period, l.spent_usd, l.reserved_usd, u.id IS NOT NULL AS took
             FROM locked l LEFT JOIN upd u ON u.id = l.id`,
          params,
        )
      })
    } catch (err) {
      // Maybe committed, its answer lost: nothing will settle it, so its lease is not renewed.
      this.settlements.drop(rid)
      // Two statements locking the same rows can still meet in a deadlock; PostgreSQL aborts one.
      if (retry < 3 && isConflict(err)) return this.reserve(req, periods, retry + 1, force, signal, held)
      throw err
    }
    // The calls admitted in process count as reserved in what a refusal names, as they did in the test.
    if (held > 0) for (const r of rows) r.reserved_usd += held
    const took = rows.filter((r) => r.took)
    if (took.length === periods.length) {
      const seen = periods.map((p) => ({ ...p, spent: rows.find((x) => x.period === p.period)!.spent_usd }))
      const win = took.find((r) => r.period === 'window')
      // A window's settled cost goes into the bucket of the call's arrival minute.
      const bucket = win ? { id: win.id, minute: minuteOf(req.ts) } : null
      return { ok: true, periods: seen, reservation: this.settlements.reservation(rid, took.map((r) => r.id), bucket, req.keyHash) }
    }
    this.settlements.drop(rid)
    if (took.length > 0) throw new Error('budget reservation: taken on some rows only') // cannot happen: all or none
    for (const p of periods) {
      if (rows.some((x) => x.period === p.period)) continue
      // Deleted behind this instance's back: create it again.
      this.rows.forget(rowKey(rk, req.keyHash, p, req.session))
      if (retry < 3) return this.reserve(req, periods, retry + 1, force, signal, held)
      throw new Error(`budget spend row for ${p.period} could not be created`)
    }
    // Every limit reached is remembered; the refusal names the one that frees last, so that a
    // retry at its reset is not refused by another (a week can end after its month).
    const reached: (PeriodState & { reserved: number })[] = []
    for (const p of periods) {
      const r = rows.find((x) => x.period === p.period)!
      if (!hasReached(r.spent_usd, p.limit)) continue
      const state = await this.figures(r, p, req.ts)
      this.remember(rowKey(rk, req.keyHash, p, req.session), r.spent_usd, state.resetsAt)
      reached.push({ ...state, reserved: reservedOf(r) })
    }
    const last = latestReset(reached)
    if (last) {
      const { reserved, ...state } = last
      return { ok: false, kind: 'reached', state, reservedUsd: reserved, worstCaseUsd: 0 }
    }
    for (const p of periods) {
      const r = rows.find((x) => x.period === p.period)!
      if (admitted(req, p, r)) continue
      const state = await this.figures(r, p, req.ts)
      if (req.rule.reserve === 'max_tokens') return { ok: false, kind: 'worst_case', state, reservedUsd: reservedOf(r), worstCaseUsd: req.amount }
      return { ok: false, kind: 'reserved', state, reservedUsd: reservedOf(r), worstCaseUsd: 0 }
    }
    throw new Error('budget reservation: no row refused and not every row took the call')
  }

  /** A period as its row answered: the shared spend, and for a window when enough of it leaves (one more query, refusals only). */
  private async figures(r: Answer, p: PeriodState, ts: number): Promise<PeriodState> {
    const state = { ...p, spent: r.spent_usd }
    if (p.period === 'window') state.resetsAt = await this.windowResetsAt(r.id, p, ts)
    return state
  }

  /**
   * When a window's shared spend will be under its limit if nothing more is spent: MinuteRing's
   * `resetsAt` over the row's buckets in the window at `now` (the call's arrival), oldest first.
   */
  private async windowResetsAt(id: number, p: PeriodState, now: number): Promise<number> {
    const length = windowLength(p)
    const buckets = await this.db.run(() => this.store.all<{ minute: number; spent_usd: number }>(
      // minute + 60000 > edge, written so that the key's range is read, not every minute the row kept.
      'SELECT minute, spent_usd FROM budget_window_spend WHERE spend_id = @id AND minute > floor(@edge::float8 - 60000)::bigint ORDER BY minute',
      { id, edge: now - length },
    ))
    const minutes = buckets.map((b) => b.minute)
    const costs = buckets.map((b) => b.spent_usd)
    let sum = 0
    for (const c of costs) sum += c
    return windowResetsAt(minutes, costs, 0, sum, p.limit, length, now)
  }

  private remember(k: string, spent: number, resetsAt: number | null): void {
    if (this.reached.size > 10_000) this.reached.clear()
    this.reached.set(k, { spent, at: Date.now(), resetsAt })
  }
}

/**
 * The key's spend rows a call's admission locks, in id order (no deadlock between instances): the
 * rows it reserves on (`own`: its rule's, one per period) and the key's other rows of the same
 * period under the rule's key pattern: the rows of the rule before its scope was edited (the rule
 * key names the scope) or, for a window, its `window_hours` (the row's start is its length: sql.ts
 * spendStart). What the calls in flight reserved on those counts against the rule as it is now
 * until they settle, as it does in process (the meters' calls in flight are carried over:
 * ../../meter-book.ts), so an edit never lets a key past its limits by what it had in flight
 * (README, Budgets). So does what such a call's settlement added to those rows while the call is
 * not stored yet (its marker still `owed`, within a lease of its settlement): the rule's own rows
 * get that cost only from the stored call (call-spend.ts), and in between they held neither its
 * reservation nor its cost.
 *
 * The other rows are locked too, and their owed cost read with a snapshot of its own
 * (burnrate_owed_usd, migration 27), once locked: while an edit reaches the instances (a config
 * changed one instance after another, a runtime rule before the others' next poll) one instance
 * admits on the old rows and another on the new ones, and read with the statement's snapshot,
 * taken before it waited for its own rows, each missed what the other reserved meanwhile: two
 * calls at once were both admitted where the limit had room for one
 * (test/budgets/postgres-scope-rollout.test.ts). Without such rows (no edit) nothing more is locked.
 */
function rowLocks(window: boolean): string {
  const edge = window ? ', w.edge' : ''
  // Found first, each kind by its own index (one OR over them all read every row of the key), then
  // locked: the columns a row is found by never change.
  return `cand AS (
                SELECT b.id, w.period, w.start, w.session, w.lim${edge}, true AS own
                  FROM want w JOIN budget_spend b
                    ON b.rule_key = @rk AND b.api_key_hash = @key AND b.period = w.period AND b.period_start = w.start AND b.session = w.session
                UNION ALL
                SELECT b.id, w.period, w.start, w.session, w.lim${edge}, false
                  FROM want w JOIN budget_spend b
                    ON b.api_key_hash = @key AND b.period = w.period AND b.period_start = w.start AND b.session = w.session
                 WHERE w.period <> 'window' AND b.rule_key <> @rk AND left(b.rule_key, length(@rkp::text)) = @rkp::text${window ? `
                UNION ALL
                SELECT b.id, w.period, w.start, w.session, w.lim${edge}, false
                  FROM want w JOIN budget_spend b ON b.api_key_hash = @key AND b.period = 'window'
                 WHERE w.period = 'window' AND NOT (b.rule_key = @rk AND b.period_start = w.start)
                   AND left(b.rule_key, length(@rkp::text)) = @rkp::text` : ''}
              ),
              rowlocks AS (
                SELECT b.id, c.period, c.start, c.session, c.lim${window ? ', c.edge' : ''}, b.spent_usd, b.reserved_usd, c.own
                  FROM cand c JOIN budget_spend b ON b.id = c.id
                 ORDER BY b.id FOR UPDATE OF b
              )`
}

/**
 * What the calls in flight reserved on the other rows of own row `x`'s period, and what their
 * settlements still owe (see rowLocks): those locked, and those created since the statement's
 * snapshot (the rule as edited on another instance creating its rows while this statement waited
 * for a lock), which `cand` cannot find: read once every row is locked, with a snapshot of their
 * own (burnrate_unseen_reserved_usd, migration 28; the array's subquery locks the rest first).
 * Builds before this one missed those, and both calls were admitted where the limit had room for
 * one (test/budgets/postgres-rollout-new-rows.test.ts).
 */
const OTHER_RESERVED = `(SELECT COALESCE(SUM(CASE WHEN o.reserved_usd > @eps::float8 THEN o.reserved_usd ELSE 0 END), 0)
                             + COALESCE(SUM(burnrate_owed_usd(o.id, @key, @lease::float8)), 0)
                        FROM rowlocks o WHERE NOT o.own AND o.period = x.period)
                       + burnrate_unseen_reserved_usd(@key, @rkp::text, x.period, x.start, x.session,
                                                      (SELECT array_agg(a.id) FROM rowlocks a), @eps::float8, @lease::float8)`

/** The CTE `locked` of the admission statement for calendar periods and sessions: the rows locked, their figures and test. */
function lockCalendar(admits: string): string {
  return `${rowLocks(false)},
              figures AS (
                SELECT id, period, lim, spent_usd, reserved_usd + ${OTHER_RESERVED} AS reserved_usd
                  FROM rowlocks x WHERE x.own
              ),
              locked AS (
                SELECT b.id, b.period, b.spent_usd, b.reserved_usd, ${admits} AS ok
                  FROM figures b, LATERAL (SELECT b.lim, b.period) w
              )`
}

/** The same with a rolling window among the periods: its spend is summed from its buckets once its row is locked. */
function lockWithWindow(admits: string): string {
  return `${rowLocks(true)},
              figures AS (
                SELECT id, period, lim, reserved_usd + ${OTHER_RESERVED} AS reserved_usd,
                       CASE WHEN period = 'window' THEN burnrate_window_spent(id, edge) ELSE spent_usd END AS spent_usd
                  FROM rowlocks x WHERE x.own
              ),
              locked AS (
                SELECT b.id, b.period, b.spent_usd, b.reserved_usd, ${admits} AS ok
                  FROM figures b, LATERAL (SELECT b.lim, b.period) w
              )`
}

/** What the calls in flight hold on a row (float residue below EPS is none). */
function reservedOf(r: Answer): number {
  return r.reserved_usd > EPS ? r.reserved_usd : 0
}

/** The test the statement made on one row, on the figures it answered with (to name the refusing period). */
function admitted(req: ReserveRequest, p: PeriodState, r: Answer): boolean {
  const lim = reachedAt(p.limit)
  if (r.spent_usd >= lim) return false
  if (req.rule.reserve === 'max_tokens') {
    return req.amount <= 0 || req.amount <= lim - r.spent_usd - (p.period === 'session' ? 0 : r.reserved_usd)
  }
  return r.reserved_usd <= EPS || p.period === 'session' || r.spent_usd + r.reserved_usd < lim
}
