import { randomUUID } from 'node:crypto'
import { ensurePostgresSchema } from '../../storage/postgres-migrations'
import type { SqlParams, SqlStore } from '../../storage/sql'
import type { PeriodState } from '../meter'
import type { Rule } from '../rules'
import { MemoryBudgetState } from './memory'
import type { BudgetState, Reservation, ReserveOutcome, ReserveRequest } from './types'

/**
 * Budget state shared by every instance on one PostgreSQL (`storage.url`).
 *
 * One spend row per rule scope, API key and period (`budget_spend`: daily, weekly and monthly
 * by the period's start, a session by its id) holds the settled spend and the sum of the
 * reservations of calls in flight. A call is admitted by ONE conditional UPDATE … RETURNING over
 * its rows: each row is checked and reserved atomically in the database, with the same test the
 * in-process state makes (README: Budgets → overshoot), so N instances admit together exactly
 * as one instance would: their overshoot is bounded by one instance's. A call's settlement adds
 * its real cost and frees its reservation in one statement.
 *
 * A row is created (INSERT … ON CONFLICT DO NOTHING) the first time any instance needs it,
 * seeded from the calls already in the `calls` table for that key, scope and period.
 *
 * Each reservation carries a lease (`budget_reservations.expires_at`, on the database's clock):
 * the instance renews its leases every `leaseMs / 3`, and every instance frees expired ones as
 * often, so an instance killed mid-call holds budget for at most `leaseMs` (default 30 s).
 *
 * Rolling windows stay per instance (their minute buckets are not in the database yet): a
 * window limit is checked against this instance's own meter. While PostgreSQL does not answer a
 * reservation, calls are decided for 5 s at a time on this instance's own meter (every
 * instance's calls as last read, plus its own since), so agents are not stranded; the limit is
 * then per instance, and those calls' costs join the existing rows when it answers.
 */

/** Default lease of a reservation (README: Team scale → budgets). */
export const DEFAULT_LEASE_MS = 30_000
/** After PostgreSQL fails a reservation, how long calls are decided in process before it is asked again. */
const DEGRADED_MS = 5000
/** What is left of a reservation after float subtraction, counted as nothing reserved. */
const EPS = 1e-12
const SESSION_HISTORY_MS = 7 * 24 * 3600_000
const NOW_MS = `(extract(epoch from clock_timestamp()) * 1000)::bigint`

export interface PgBudgetStateOptions {
  /** How long a reservation outlives its instance's last renewal (ms). */
  leaseMs?: number
  /** This instance's name in `budget_reservations.instance` (default: a random id per process start). */
  instance?: string
  /** Statements at a time (default 6, under the pool's 10 connections, leaving room for the ledger). */
  concurrency?: number
}

/** The identity of a rule's spend: its key pattern and scope (limits can change without losing spend). */
export function ruleKey(r: Rule): string {
  return JSON.stringify([r.api_key_pattern, r.provider, r.model_pattern, r.agent, r.tenant])
}

function likePrefix(p: string): string {
  return p.slice(0, -1).replace(/[\\%_]/g, (c) => `\\${c}`) + '%'
}

/** SQL conditions on `calls` for a rule's scope (the engine's scopeMatches, in SQL). */
function scopeSql(r: Rule, params: SqlParams): string {
  const out: string[] = []
  const add = (col: string, pattern: string | null, name: string) => {
    if (pattern === null) return
    if (pattern.endsWith('*')) {
      params[name] = likePrefix(pattern)
      out.push(`${col} LIKE @${name} ESCAPE '\\'`)
    } else {
      params[name] = pattern
      out.push(`${col} = @${name}`)
    }
  }
  add('provider', r.provider, 'sc_provider')
  add('model', r.model_pattern, 'sc_model')
  add('agent', r.agent, 'sc_agent')
  add('tenant', r.tenant, 'sc_tenant')
  return out.map((c) => ` AND ${c}`).join('')
}

interface Answer {
  id: number
  period: string
  spent_usd: number
  reserved_usd: number
  /** The row admitted the call and holds its reservation. */
  took: boolean
}

function rowKey(rk: string, hash: string, p: PeriodState, session: string): string {
  return `${rk}\u0000${hash}\u0000${p.period}\u0000${p.period === 'session' ? 0 : p.start}\u0000${p.period === 'session' ? session : ''}`
}

/**
 * At most `max` statements at a time; the rest wait here, in order. A burst of calls then queues
 * in this process rather than in the pool, whose wait for a connection times out (5 s).
 */
class Limiter {
  private running = 0
  private readonly queue: (() => void)[] = []

  constructor(private readonly max: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.max) await new Promise<void>((r) => this.queue.push(r))
    this.running++
    try {
      return await fn()
    } finally {
      this.running--
      this.queue.shift()?.()
    }
  }
}

export class PgBudgetState implements BudgetState {
  readonly kind = 'postgres' as const
  readonly instance: string
  readonly leaseMs: number
  private readonly local = new MemoryBudgetState()
  /** Spend rows this instance knows exist (no seed INSERT on the hot path). */
  private known = new Set<string>()
  private readonly seeding = new Map<string, Promise<void>>()
  /** Spend rows the database said are at their limit, with that spend (calendar periods only grow). */
  private readonly reached = new Map<string, number>()
  private timer: NodeJS.Timeout | null = null
  /** Settlements not yet written (in flight, or retried after a database error). */
  private unsettled = new Map<string, { ids: number[]; cost: number }>()
  private writing = new Set<Promise<void>>()
  private readonly db: Limiter
  /** Until then (ms), admission is decided in process: the last reservation found PostgreSQL away. */
  private degradedUntil = 0
  /** Reservations PostgreSQL did not answer (decided in process instead). */
  failures = 0
  /** Costs of calls decided in process, not yet in their spend rows. */
  private late: { req: ReserveRequest; cost: number }[] = []
  /** Settlements waiting for this turn's statement. */
  private batch: { rid: string; ids: number[]; cost: number }[] = []
  /** Settlements being written now (not retried by the tick meanwhile). */
  private readonly inFlight = new Set<string>()

  constructor(
    private readonly store: SqlStore,
    opts: PgBudgetStateOptions = {},
  ) {
    if (store.dialect !== 'postgres') throw new Error('PgBudgetState needs a PostgreSQL store')
    this.leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS
    this.instance = opts.instance ?? randomUUID()
    this.db = new Limiter(opts.concurrency ?? 6)
    this.timer = setInterval(() => void this.tick(), Math.max(50, Math.floor(this.leaseMs / 3)))
    this.timer.unref()
  }

  /** Renews this instance's leases, frees expired ones (any instance's) and retries settlements. */
  async tick(): Promise<void> {
    try {
      await this.store.run(`UPDATE budget_reservations SET expires_at = ${NOW_MS} + @lease WHERE instance = @me`, {
        lease: this.leaseMs,
        me: this.instance,
      })
      await this.sweep()
      for (const [rid, u] of this.unsettled) if (!this.inFlight.has(rid)) this.write(rid, u.ids, u.cost)
      await this.writeLate()
    } catch {
      // the database is away: the next tick tries again
    }
  }

  /** Frees the reservations whose lease has run out (their instance stopped renewing). */
  async sweep(): Promise<number> {
    return this.store.run(
      `WITH gone AS (DELETE FROM budget_reservations WHERE expires_at < ${NOW_MS} RETURNING spend_id, amount_usd),
            sums AS (SELECT spend_id, SUM(amount_usd) AS amount FROM gone GROUP BY spend_id)
       UPDATE budget_spend b SET reserved_usd = GREATEST(0, b.reserved_usd - sums.amount)
         FROM sums WHERE b.id = sums.spend_id`,
    )
  }

  reserve(req: ReserveRequest): ReserveOutcome | Promise<ReserveOutcome> {
    const shared = req.periods.filter((p) => p.period !== 'window')
    const windowed = req.periods.filter((p) => p.period === 'window')
    let local: Reservation | null = null
    if (windowed.length) {
      const o = this.local.reserve({ ...req, periods: windowed })
      if (!o.ok) return o
      local = o.reservation
    }
    if (shared.length === 0) {
      return { ok: true, periods: req.periods, reservation: local! }
    }
    // PostgreSQL away: this instance decides alone on what it has seen (README: degraded).
    if (Date.now() < this.degradedUntil) return this.alone(req, local)
    return this.schema()
      .then(() => this.reserveShared(req, shared))
      .then(
      (o) => {
        if (!o.ok) {
          local?.release()
          return o
        }
        const periods = req.periods.map((p) => (p.period === 'window' ? p : o.periods.find((x) => x.period === p.period) ?? p))
        const both: Reservation = local
          ? { settle: (c) => (local.settle(c), o.reservation.settle(c)), release: () => (local.release(), o.reservation.release()) }
          : o.reservation
        return { ok: true, periods, reservation: both }
      },
      () => {
        this.degradedUntil = Date.now() + DEGRADED_MS
        this.failures++
        return this.alone(req, local)
      },
    )
  }

  /** The schema, made sure of once (the ledger migrates too, but only before its first write). */
  private schema(): Promise<unknown> {
    return ensurePostgresSchema(this.store)
  }

  /** The in-process decision on this instance's own meter (its calls since it started), while PostgreSQL is away. */
  private alone(req: ReserveRequest, local: Reservation | null): ReserveOutcome {
    local?.release()
    const o = this.local.reserve(req)
    if (!o.ok) return o
    const shared = req.periods.filter((p) => p.period !== 'window')
    // Its cost joins the shared spend when PostgreSQL answers again.
    const late = (cost: number) => {
      if (cost > 0 && shared.length) this.late.push({ req: { ...req, periods: shared }, cost })
    }
    let done = false
    return {
      ...o,
      reservation: {
        settle: (cost) => {
          if (done) return
          done = true
          o.reservation.settle(cost)
          late(cost)
        },
        release: () => {
          if (done) return
          done = true
          o.reservation.release()
        },
      },
    }
  }

  /** Adds the costs of calls decided in process while PostgreSQL was away to their spend rows. */
  private async writeLate(): Promise<void> {
    while (this.late.length > 0) {
      const { req, cost } = this.late[0]
      const rk = ruleKey(req.rule)
      // Only rows that already exist: a row created now starts from the calls table, which has
      // (or will have, once this instance's ledger has written it) this call already.
      const params: SqlParams = { rk, key: req.keyHash, cost }
      const match = req.periods.map((p, i) => {
        params[`p${i}`] = p.period
        params[`s${i}`] = p.period === 'session' ? 0 : p.start
        params[`n${i}`] = p.period === 'session' ? req.session : ''
        return `(period = @p${i} AND period_start = @s${i} AND session = @n${i})`
      })
      await this.db.run(() =>
        this.store.run(
          `UPDATE budget_spend SET spent_usd = spent_usd + @cost::float8 WHERE rule_key = @rk AND api_key_hash = @key AND (${match.join(' OR ')})`,
          params,
        ),
      )
      this.late.shift()
    }
  }

  private async ensureRows(rk: string, req: ReserveRequest, periods: PeriodState[]): Promise<void> {
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

  /** Creates a spend row (if no instance has yet), from the calls already recorded for its key, scope and period. */
  private async seed(rk: string, req: ReserveRequest, p: PeriodState): Promise<void> {
    const session = p.period === 'session'
    const params: SqlParams = {
      rk,
      key: req.keyHash,
      period: p.period,
      start: session ? 0 : p.start,
      session: session ? req.session : '',
      since: session ? Date.now() - SESSION_HISTORY_MS : p.start,
    }
    const scope = scopeSql(req.rule, params)
    await this.db.run(() => this.store.run(
      `INSERT INTO budget_spend (rule_key, api_key_hash, period, period_start, session, spent_usd, reserved_usd, created_at)
       SELECT @rk, @key, @period, @start, @session, COALESCE(SUM(cost_usd), 0), 0, ${NOW_MS} FROM calls
        WHERE api_key_hash = @key AND ts >= @since AND billing <> 'subscription'${session ? ' AND session = @session' : ''}${scope}
       ON CONFLICT (rule_key, api_key_hash, period, period_start, session) DO NOTHING`,
      params,
    ))
  }

  private async reserveShared(req: ReserveRequest, periods: PeriodState[], retry = 0): Promise<ReserveOutcome> {
    const rk = ruleKey(req.rule)
    // A calendar period's spend only grows: once the database said it reached this limit, the
    // answer stands for the rest of the period (no round trip to refuse).
    for (const p of periods) {
      if (p.period === 'session') continue
      const spent = this.reached.get(rowKey(rk, req.keyHash, p, req.session))
      if (spent !== undefined && spent >= p.limit) return { ok: false, kind: 'reached', state: { ...p, spent }, reservedUsd: 0, worstCaseUsd: 0 }
    }
    await this.ensureRows(rk, req, periods)
    const rid = randomUUID()
    const params: SqlParams = { rk, key: req.keyHash, x: req.amount, rid, me: this.instance, lease: this.leaseMs, eps: EPS }
    const values = periods.map((p, i) => {
      params[`p${i}`] = p.period
      params[`s${i}`] = p.period === 'session' ? 0 : p.start
      params[`n${i}`] = p.period === 'session' ? req.session : ''
      params[`l${i}`] = p.limit
      return `(@p${i}::text, @s${i}::bigint, @n${i}::text, @l${i}::float8)`
    })
    // The same test as the in-process state: `expected` admits while settled spend plus what is
    // in flight is under the limit; `max_tokens` while the worst case fits in what is left.
    const admits =
      req.rule.reserve === 'max_tokens'
        ? `(@x::float8 <= 0 OR @x::float8 <= w.lim - b.spent_usd - CASE WHEN w.period = 'session' THEN 0 ELSE b.reserved_usd END)`
        : `(b.reserved_usd <= @eps::float8 OR w.period = 'session' OR b.spent_usd + b.reserved_usd < w.lim)`
    params.n = periods.length
    let rows: Answer[]
    try {
      // One round trip: lock the call's rows in id order (no deadlock between instances; the
      // locked values are the latest and cannot move until this statement ends), reserve on all
      // of them only if every one admits, record the reservation with its lease, and answer with
      // each row's figures (what a refusal names).
      rows = await this.db.run(() => this.store.all<Answer>(
        `WITH want (period, start, session, lim) AS (VALUES ${values.join(', ')}),
              locked AS (
                SELECT b.id, w.period, b.spent_usd, b.reserved_usd, (b.spent_usd < w.lim AND ${admits}) AS ok
                  FROM budget_spend b JOIN want w
                    ON b.period = w.period AND b.period_start = w.start AND b.session = w.session
                 WHERE b.rule_key = @rk AND b.api_key_hash = @key
                 ORDER BY b.id FOR UPDATE OF b
              ),
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
      ))
    } catch (err) {
      // Two statements locking the same rows can still meet in a deadlock; PostgreSQL aborts one.
      if (retry < 3 && ['40P01', '40001'].includes((err as { code?: string }).code ?? '')) return this.reserveShared(req, periods, retry + 1)
      throw err
    }
    const took = rows.filter((r) => r.took)
    if (took.length === periods.length) {
      const seen = periods.map((p) => ({ ...p, spent: rows.find((x) => x.period === p.period)!.spent_usd }))
      return { ok: true, periods: seen, reservation: this.reservation(rid, took.map((r) => r.id)) }
    }
    if (took.length > 0) throw new Error('budget reservation: taken on some rows only') // cannot happen: all or none
    for (const p of periods) {
      const r = rows.find((x) => x.period === p.period)
      if (!r) {
        // Deleted behind this instance's back: create it again.
        this.known.delete(rowKey(rk, req.keyHash, p, req.session))
        if (retry < 3) return this.reserveShared(req, periods, retry + 1)
        throw new Error(`budget spend row for ${p.period} could not be created`)
      }
      const state = { ...p, spent: r.spent_usd }
      const reserved = r.reserved_usd > EPS ? r.reserved_usd : 0
      if (r.spent_usd >= p.limit) {
        if (p.period !== 'session') this.remember(rowKey(rk, req.keyHash, p, req.session), r.spent_usd)
        return { ok: false, kind: 'reached', state, reservedUsd: reserved, worstCaseUsd: 0 }
      }
      if (this.admitted(req, p, r)) continue
      if (req.rule.reserve === 'max_tokens') return { ok: false, kind: 'worst_case', state, reservedUsd: reserved, worstCaseUsd: req.amount }
      return { ok: false, kind: 'reserved', state, reservedUsd: reserved, worstCaseUsd: 0 }
    }
    throw new Error('budget reservation: no row refused and not every row took the call')
  }

  /** The test the statement made on one row, on the figures it answered with (to name the refusing period). */
  private admitted(req: ReserveRequest, p: PeriodState, r: Answer): boolean {
    if (r.spent_usd >= p.limit) return false
    if (req.rule.reserve === 'max_tokens') {
      return req.amount <= 0 || req.amount <= p.limit - r.spent_usd - (p.period === 'session' ? 0 : r.reserved_usd)
    }
    return r.reserved_usd <= EPS || p.period === 'session' || r.spent_usd + r.reserved_usd < p.limit
  }

  private remember(k: string, spent: number): void {
    if (this.reached.size > 10_000) this.reached.clear()
    this.reached.set(k, spent)
  }

  private reservation(rid: string, ids: number[]): Reservation {
    let done = false
    const settle = (cost: number) => {
      if (done) return
      done = true
      this.unsettled.set(rid, { ids, cost: cost > 0 ? cost : 0 })
      this.write(rid, ids, cost > 0 ? cost : 0)
    }
    return { settle, release: () => settle(0) }
  }

  /**
   * Queues a settled call: its cost is added and its reservation freed (if its lease has not
   * already run out) together with the other settlements of this turn of the event loop, in one
   * statement, so a busy instance holds each hot spend row once per batch rather than per call.
   */
  private write(rid: string, ids: number[], cost: number): void {
    this.inFlight.add(rid)
    this.batch.push({ rid, ids, cost })
    if (this.batch.length > 1) return
    const p: Promise<void> = new Promise<void>((r) => setImmediate(r))
      .then(() => this.flush())
      .finally(() => this.writing.delete(p))
    this.writing.add(p)
  }

  private async flush(): Promise<void> {
    const batch = this.batch
    this.batch = []
    const rids: string[] = []
    const sids: number[] = []
    const costs: number[] = []
    for (const w of batch) {
      for (const id of w.ids) {
        rids.push(w.rid)
        sids.push(id)
        costs.push(w.cost)
      }
    }
    try {
      await this.db.run(() =>
        this.store.run(
          `WITH input AS (SELECT * FROM unnest(@rids::text[], @sids::bigint[], @costs::float8[]) AS t (rid, sid, cost)),
                d AS (DELETE FROM budget_reservations r USING input i WHERE r.id = i.rid AND r.spend_id = i.sid RETURNING r.spend_id, r.amount_usd),
                freed AS (SELECT spend_id, SUM(amount_usd) AS amount FROM d GROUP BY spend_id),
                added AS (SELECT sid, SUM(cost) AS cost FROM input GROUP BY sid),
                locked AS (SELECT id FROM budget_spend WHERE id IN (SELECT sid FROM added) ORDER BY id FOR UPDATE)
           UPDATE budget_spend b
              SET spent_usd = b.spent_usd + a.cost,
                  reserved_usd = GREATEST(0, b.reserved_usd - COALESCE(f.amount, 0))
             FROM added a LEFT JOIN freed f ON f.spend_id = a.sid
            WHERE b.id = a.sid AND b.id IN (SELECT id FROM locked)`,
          { rids, sids, costs },
        ),
      )
      for (const w of batch) this.unsettled.delete(w.rid)
    } catch {
      // kept in `unsettled`: the next tick writes them
    } finally {
      for (const w of batch) this.inFlight.delete(w.rid)
    }
  }

  /**
   * Resolves when every settlement handed to this state so far is written (tests, shutdown),
   * retrying those the database refused up to `attempts` times; false when some are still unwritten.
   */
  async settled(attempts = 5): Promise<boolean> {
    for (let i = 0; ; i++) {
      while (this.writing.size > 0) await Promise.all([...this.writing])
      if (this.unsettled.size === 0) return true
      if (i >= attempts) return false
      await new Promise((r) => setTimeout(r, 100 * (i + 1)))
      for (const [rid, u] of this.unsettled) if (!this.inFlight.has(rid)) this.write(rid, u.ids, u.cost)
    }
  }

  /** Settlements that could not be written yet (the database is away). */
  get pendingSettlements(): number {
    return this.unsettled.size
  }

  /** Stops renewing leases (the instance stops), after writing the settlements still pending. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.settled(2)
  }
}
