import { randomUUID } from 'node:crypto'
import { ensurePostgresSchema } from '../../storage/postgres-migrations'
import type { SqlStore } from '../../storage/sql'
import { MemoryBudgetState } from './memory'
import { Admission } from './pg/admission'
import { renewLeases, sweepExpired } from './pg/leases'
import { Limiter } from './pg/limiter'
import { Settlements } from './pg/settlements'
import { SpendRows, pruneWindowBuckets } from './pg/spend-rows'
import type { BudgetState, Reservation, ReserveOutcome, ReserveRequest } from './types'

import { ruleKey, rulePatternPrefix } from './pg/sql'

export { ruleKey }

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
 * the instance renews the leases of the calls it still holds every `leaseMs / 3`, and every
 * instance frees expired ones as often, so an instance killed mid-call holds budget for at most
 * `leaseMs` (default 30 s), and so does a reservation whose admission answer was lost.
 *
 * A rolling window has a spend row too (period 'window', `period_start` its length in ms), with
 * its spend in per-minute buckets of arrival time (`budget_window_spend`): admission sums the
 * buckets in the window for the locked row in the same statement, settlement adds a call's cost
 * to the bucket of its arrival minute, and the tick deletes buckets older than any window.
 * While PostgreSQL does not answer a
 * reservation, calls are decided for 5 s at a time on this instance's own meter (every
 * instance's calls as last read, plus its own since), so agents are not stranded; the limit is
 * then per instance, and those calls' costs join the shared rows when the ledger stores them.
 *
 * Every call stored in `calls` (by any instance's ledger, by import; not the calls a team server
 * ingests, which count in no budget) also adds its cost to every existing row of its key whose
 * scope and period it matches, in the transaction that stores it, except the rows its own
 * reservation settled (pg/call-spend.ts).
 *
 * The parts, in ./pg: the spend rows and their seeding (spend-rows.ts), the admission statement
 * (admission.ts), settlement batching (settlements.ts), leases (leases.ts), stored calls
 * counted in the rows (call-spend.ts); this class puts them together, decides in process
 * while PostgreSQL is away, and runs the periodic tick.
 */

/** Default lease of a reservation (README: Team scale → budgets). */
export const DEFAULT_LEASE_MS = 30_000
/** How often the tick deletes window buckets too old for any window. */
const PRUNE_EVERY_MS = 60_000
/** After PostgreSQL fails a reservation, how long calls are decided in process before it is asked again. */
const DEGRADED_MS = 5000
/** How long after a refusal for calls in flight alone it is asked once more (see askAgain). */
const RESERVED_RECHECK_MS = 100
/** Default longest wait for PostgreSQL's answer to an admission (`storage.budget_wait_ms`). */
export const DEFAULT_ADMISSION_WAIT_MS = 3000

const NOTHING_RESERVED: Reservation = { settle: () => {}, release: () => {} }

export interface PgBudgetStateOptions {
  /** How long a reservation outlives its instance's last renewal (ms). */
  leaseMs?: number
  /** This instance's name in `budget_reservations.instance` (default: a random id per process start). */
  instance?: string
  /** Statements at a time (default 6, under the pool's 10 connections, leaving room for the ledger). */
  concurrency?: number
  /**
   * Longest wait for PostgreSQL's answer to an admission (ms, default DEFAULT_ADMISSION_WAIT_MS):
   * past it the call is decided in process, as when the database refuses.
   */
  admissionWaitMs?: number
}

/** A reservation the database made, whose end also ends `local` (the call's hold on its meter). */
function withLocal(o: ReserveOutcome & { ok: true }, local: () => void): ReserveOutcome {
  const r = o.reservation
  return {
    ...o,
    reservation: {
      settle: (c) => {
        local()
        r.settle(c)
      },
      release: () => {
        local()
        r.release()
      },
      settles: r.settles,
    },
  }
}

/**
 * A rule's key pattern and a key: what calls admitted in process are held by. Not its scope: one
 * rule of a pattern is in force, and a rule whose scope is edited counts the key's calls in flight
 * admitted under it before (README, Budgets), those decided in process among them.
 */
function heldKey(req: ReserveRequest): string {
  return `${rulePatternPrefix(req.rule)}\n${req.keyHash}`
}

export class PgBudgetState implements BudgetState {
  readonly kind = 'postgres' as const
  readonly instance: string
  readonly leaseMs: number
  private readonly local = new MemoryBudgetState()
  private timer: NodeJS.Timeout | null = null
  private readonly settlements: Settlements
  private readonly admission: Admission
  /** When the tick next prunes old window buckets (ms). */
  private nextPrune = 0
  /** Until then (ms), admission is decided in process: the last reservation found PostgreSQL away. */
  private degradedUntil = 0
  /** Reservations PostgreSQL did not answer (decided in process instead). */
  failures = 0
  /** Admissions given up on whose statement has not ended yet: calls are decided in process meanwhile. */
  private unanswered = 0
  private readonly admissionWaitMs: number
  /** What the calls admitted in process (PostgreSQL away) and still in flight reserved, by rule and key (`heldKey`). */
  private readonly inProcess = new Map<string, number>()

  constructor(
    private readonly store: SqlStore,
    opts: PgBudgetStateOptions = {},
  ) {
    if (store.dialect !== 'postgres') throw new Error('PgBudgetState needs a PostgreSQL store')
    this.leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS
    this.instance = opts.instance ?? randomUUID()
    this.admissionWaitMs = opts.admissionWaitMs ?? DEFAULT_ADMISSION_WAIT_MS
    const db = new Limiter(opts.concurrency ?? 6)
    this.settlements = new Settlements(store, db)
    this.admission = new Admission(store, db, new SpendRows(store, db), this.settlements, this.instance, this.leaseMs)
    this.timer = setInterval(() => void this.tick(), Math.max(50, Math.floor(this.leaseMs / 3)))
    this.timer.unref()
  }

  /** Renews the leases of this instance's calls in flight, frees expired ones (any instance's) and retries settlements. */
  async tick(): Promise<void> {
    try {
      await renewLeases(this.store, this.instance, this.leaseMs, this.settlements.holding)
      await this.sweep()
      this.settlements.retry()
      if (Date.now() >= this.nextPrune) {
        await this.prune()
        this.nextPrune = Date.now() + PRUNE_EVERY_MS
      }
    } catch {
      // the database is away: the next tick tries again
    }
  }

  /**
   * Deletes rolling-window buckets no window can count any more: older than the longest window
   * a rule may have (744 h) plus a margin, on the database's clock. Returns how many.
   */
  async prune(): Promise<number> {
    return pruneWindowBuckets(this.store)
  }

  /** Frees the reservations whose lease has run out (their instance stopped renewing). */
  async sweep(): Promise<number> {
    return sweepExpired(this.store)
  }

  reserve(req: ReserveRequest): ReserveOutcome | Promise<ReserveOutcome> {
    // A block rule with per-minute limits only: no money limit to reserve against.
    if (req.periods.length === 0) return { ok: true, periods: req.periods, reservation: NOTHING_RESERVED }
    // PostgreSQL away, or still not answering an admission given up on: this instance decides
    // alone on what it has seen (README: degraded).
    if (Date.now() < this.degradedUntil || this.unanswered > 0) return this.decideInProcess(req)
    const given = new AbortController()
    // The key's last call's settlement, when still being written, first: its reservation is freed
    // there, and must not count against the call that follows its answer.
    const before = this.settlements.written(req.keyHash)
    // The call on the rule's meter for its key from now on, as one in flight (a reload of the
    // meters meanwhile carries it over): should PostgreSQL go away, the calls decided in process
    // count it, as one instance alone would. Dropped if the call is refused or decided in process.
    // (Its release frees the hold once, however often called.)
    const drop = this.local.hold(req).release
    const ask = () => this.admission.reserve(req, req.periods, 0, false, given.signal, this.inProcess.get(heldKey(req)) ?? 0)
    const asked = (before ? before.then(() => this.schema()) : this.schema()).then(ask).then((o) => this.askAgain(o, ask, given.signal))
    return new Promise<ReserveOutcome>((resolve) => {
      // A database that does not answer (rows another session holds locked, a server that hangs)
      // must not hold the agent's call: past the wait the call is decided in process. The
      // statement, if it runs after all, reserves for no call: its reservation is freed at once.
      const timer = setTimeout(() => {
        given.abort()
        this.unanswered++
        this.degrade()
        drop()
        resolve(this.decideInProcess(req))
        asked
          .then((late) => {
            if (late.ok) late.reservation.release()
          }, () => {})
          .finally(() => this.unanswered--)
      }, this.admissionWaitMs)
      asked.then(
        (o) => {
          if (given.signal.aborted) return
          clearTimeout(timer)
          if (!o.ok) drop()
          resolve(o.ok ? withLocal(o, drop) : o)
        },
        () => {
          if (given.signal.aborted) return
          clearTimeout(timer)
          this.degrade()
          drop()
          resolve(this.decideInProcess(req))
        },
      )
    })
  }

  /**
   * A refusal for calls in flight alone (spent under the limit), asked once more a moment later:
   * another instance's settlement of the key's last call, whose answer the agent already has, may
   * not have committed yet when its next call, sent to this instance, asks. A call really in
   * flight still holds its reservation then, and the refusal stands.
   */
  private async askAgain(o: ReserveOutcome, ask: () => Promise<ReserveOutcome>, signal: AbortSignal): Promise<ReserveOutcome> {
    if (o.ok || o.kind !== 'reserved' || signal.aborted) return o
    await new Promise((r) => setTimeout(r, RESERVED_RECHECK_MS))
    return signal.aborted ? o : ask()
  }

  private degrade(): void {
    this.degradedUntil = Date.now() + DEGRADED_MS
    this.failures++
  }

  /**
   * A background response's reservation held again after a restart: reserved on its spend rows
   * without the admission test, with this instance's lease, renewed while it is held. (The
   * previous process's reservation, no longer renewed, runs out with its lease.)
   */
  async hold(req: ReserveRequest): Promise<Reservation> {
    if (req.periods.length === 0) return NOTHING_RESERVED
    await this.schema()
    const o = await this.admission.reserve(req, req.periods, 0, true)
    if (!o.ok) throw new Error('budget reservation: not held')
    return o.reservation
  }

  /**
   * Admission while PostgreSQL does not answer: the call is decided on this instance's own meter
   * (every instance's calls as last read, plus its own since), so agents are not stranded; the
   * limit is then per instance. Nothing is reserved in the database, so the settlement writes
   * nothing there: such a call carries no `settles` rows, and its cost joins the shared spend rows
   * when the ledger stores it (pg/call-spend.ts), once, or, for a row created after that,
   * through the row's seed from `calls`.
   */
  private decideInProcess(req: ReserveRequest): ReserveOutcome {
    const o = this.local.reserve(req)
    if (!o.ok) return o
    // Not in the database: until it ends, the database's admissions of the key count it (`held`).
    const m = heldKey(req)
    this.inProcess.set(m, (this.inProcess.get(m) ?? 0) + req.amount)
    let done = false
    const end = () => {
      if (done) return false
      done = true
      const left = (this.inProcess.get(m) ?? 0) - req.amount
      if (left > 1e-12) this.inProcess.set(m, left)
      else this.inProcess.delete(m)
      return true
    }
    const r = o.reservation
    return { ...o, reservation: { settle: (c) => end() && r.settle(c), release: () => end() && r.release() } }
  }

  /** The schema, made sure of once (the ledger migrates too, but only before its first write). */
  private schema(): Promise<unknown> {
    return ensurePostgresSchema(this.store)
  }

  /**
   * Resolves when every settlement handed to this state so far is written (tests, shutdown),
   * retrying those the database refused up to `attempts` times; false when some are still unwritten.
   */
  async settled(attempts = 5): Promise<boolean> {
    return this.settlements.settled(attempts)
  }

  /** Settlements that could not be written yet (the database is away). */
  get pendingSettlements(): number {
    return this.settlements.pending
  }

  /** Stops renewing leases (the instance stops), after writing the settlements still pending. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.settled(2)
  }
}
