import type { SqlStore } from '../../../storage/sql'
import type { Reservation } from '../types'
import { settledRows } from './call-spend'
import type { Limiter } from './limiter'

/**
 * Adds `@bcosts` to the window buckets (`@bsids`, `@bminutes`) of the reservations `@brids` first
 * settled now (CTE `fresh`), part of a statement whose CTE `locked` holds the window rows locked
 * first (bucket writes hold their row's lock to the commit: admission reads a window's buckets
 * under that lock, see admission.ts).
 */
const ADD_BUCKETS = `INSERT INTO budget_window_spend (spend_id, minute, spent_usd)
  SELECT sid, minute, SUM(cost) FROM unnest(@brids::text[], @bsids::bigint[], @bminutes::bigint[], @bcosts::float8[]) AS t (rid, sid, minute, cost)
   WHERE sid IN (SELECT id FROM locked) AND rid IN (SELECT rid FROM fresh)
   GROUP BY sid, minute
  ON CONFLICT (spend_id, minute) DO UPDATE SET spent_usd = budget_window_spend.spent_usd + excluded.spent_usd`

/** A call's rolling-window spend row and its arrival minute: the bucket its cost goes into. */
export interface WindowBucket {
  id: number
  minute: number
}

/**
 * Settling admitted calls: a call's real cost is added to its spend rows (a window row's to its
 * bucket for the call's arrival minute) and its reservation freed, batched per turn of the event loop. A settlement the database refused stays pending and
 * is written again by `retry()` (the state's tick) or `settled()`.
 */
export class Settlements {
  /** Settlements not yet written (in flight, or retried after a database error), with their call's key hash ('' unknown). */
  private unsettled = new Map<string, { ids: number[]; cost: number; window: WindowBucket | null; key: string }>()
  private writing = new Set<Promise<void>>()
  /** Settlements waiting for this turn's statement. */
  private batch: { rid: string; ids: number[]; cost: number; window: WindowBucket | null }[] = []
  /** Settlements being written now (not retried by the tick meanwhile). */
  private readonly inFlight = new Set<string>()
  /**
   * Reservations this instance still holds: from before their admission statement runs until
   * their settlement is written. Only these have their leases renewed, so a reservation whose
   * admission answer was lost (the call decided in process, its id forgotten) expires with its lease.
   */
  private readonly held = new Set<string>()

  constructor(
    private readonly store: SqlStore,
    private readonly db: Limiter,
  ) {}

  /** Reservation `rid` is about to be asked for (its lease renewed until it is settled or dropped). */
  hold(rid: string): void {
    this.held.add(rid)
  }

  /** Reservation `rid` was not made, or its answer was lost: no call owns it, its lease is left to run out. */
  drop(rid: string): void {
    this.held.delete(rid)
  }

  /** The reservations whose leases this instance renews. */
  get holding(): string[] {
    return [...this.held]
  }

  /** Admissions waiting for their key's settlements being written (`written`), by key hash. */
  private readonly keyWaiters = new Map<string, (() => void)[]>()

  /** The handle of reservation `rid` on spend rows `ids` (one of them maybe a window's, `window`) of the key `keyHash`: settled or released once. */
  reservation(rid: string, ids: number[], window: WindowBucket | null = null, keyHash = ''): Reservation {
    let done = false
    const settle = (cost: number) => {
      if (done) return
      done = true
      this.unsettled.set(rid, { ids, cost: cost > 0 ? cost : 0, window, key: keyHash })
      this.write(rid, ids, cost > 0 ? cost : 0, window)
    }
    return { settle, release: () => settle(0), settles: settledRows(rid, ids) }
  }

  /**
   * Resolves once the settlements of key `keyHash` handed over so far have been tried (committed,
   * or refused by the database and left to `retry`); at once when it has none. Its next call's
   * admission waits for them: an agent sends its next call as soon as the last one's answer
   * arrived, and the reservation that answer's settlement frees must not count against it (a
   * cold start's expected cost can be more than the whole limit).
   */
  written(keyHash: string): Promise<void> | null {
    if (!this.writingFor(keyHash)) return null
    return new Promise((resolve) => {
      let list = this.keyWaiters.get(keyHash)
      if (!list) this.keyWaiters.set(keyHash, (list = []))
      list.push(resolve)
    })
  }

  /** Whether a settlement of the key is queued or being written (`inFlight` holds both; each is in `unsettled` until it commits). */
  private writingFor(keyHash: string): boolean {
    for (const rid of this.inFlight) if (this.unsettled.get(rid)?.key === keyHash) return true
    return false
  }

  /** A write of the key's settlements ended (committed or not): its waiters go on once none of them is being written. */
  private tried(keyHash: string): void {
    const waiters = this.keyWaiters.get(keyHash)
    if (!waiters || this.writingFor(keyHash)) return
    this.keyWaiters.delete(keyHash)
    for (const w of waiters) w()
  }

  /** Writes again the settlements the database refused (those not being written now). */
  retry(): void {
    for (const [rid, u] of this.unsettled) if (!this.inFlight.has(rid)) this.write(rid, u.ids, u.cost, u.window)
  }

  /**
   * Queues a settled call: its cost is added and its reservation freed (if its lease has not
   * already run out) together with the other settlements of this turn of the event loop, in one
   * statement, so a busy instance holds each hot spend row once per batch rather than per call.
   */
  private write(rid: string, ids: number[], cost: number, window: WindowBucket | null): void {
    this.inFlight.add(rid)
    this.batch.push({ rid, ids, cost, window })
    if (this.batch.length > 1) return
    const p: Promise<void> = new Promise<void>((r) => setImmediate(r))
      .then(() => this.flush())
      .finally(() => this.writing.delete(p))
    this.writing.add(p)
  }

  /**
   * One statement per batch, idempotent by reservation id: a statement that committed but whose
   * answer was lost (the connection cut) stays in `unsettled` and runs again; its reservation ids
   * are in `budget_settled` by then, so the retry adds no cost a second time (and frees nothing
   * more: the reservation is gone). Nor does a settlement whose call the ledger stored first
   * (call-spend.ts: the ledger then adds the cost). A settlement that adds a cost marks its id
   * `owed` (kept until its call is stored: leases.ts). The ids are inserted in order (two statements
   * cannot wait on each other's), and all of them before any spend row is locked (`added` is an
   * aggregate), as the ledger inserts them before it locks any.
   */
  private async flush(): Promise<void> {
    const batch = this.batch
    this.batch = []
    // The keys whose next admissions may wait on this write (read now: a committed settlement leaves `unsettled`).
    const keys = new Set(batch.map((w) => this.unsettled.get(w.rid)?.key ?? ''))
    const rids: string[] = []
    const sids: number[] = []
    const costs: number[] = []
    // The reservations whose settlement adds a cost: their calls, when stored, must skip these rows.
    const owed: string[] = []
    // Window rows: the cost goes into the bucket of the call's arrival minute, not spent_usd.
    const brids: string[] = []
    const bsids: number[] = []
    const bminutes: number[] = []
    const bcosts: number[] = []
    // Each settlement's key and cost, kept with its marker while its call is not stored (an
    // admission under its rule as edited since counts it: admission.ts OTHER_RESERVED).
    const mrids: string[] = []
    const mkeys: string[] = []
    const mcosts: number[] = []
    for (const w of batch) {
      mrids.push(w.rid)
      mkeys.push(this.unsettled.get(w.rid)?.key ?? '')
      mcosts.push(w.cost)
      if (w.cost > 0) owed.push(w.rid)
      for (const id of w.ids) {
        rids.push(w.rid)
        sids.push(id)
        costs.push(w.window?.id === id ? 0 : w.cost)
      }
      if (w.window && w.cost > 0) {
        brids.push(w.rid)
        bsids.push(w.window.id)
        bminutes.push(w.window.minute)
        bcosts.push(w.cost)
      }
    }
    try {
      await this.db.run(() =>
        this.store.run(
          `WITH input AS (SELECT * FROM unnest(@rids::text[], @sids::bigint[], @costs::float8[]) AS t (rid, sid, cost)),
                d AS (DELETE FROM budget_reservations r USING input i WHERE r.id = i.rid AND r.spend_id = i.sid RETURNING r.spend_id, r.amount_usd),
                freed AS (SELECT spend_id, SUM(amount_usd) AS amount FROM d GROUP BY spend_id),
                fresh AS (INSERT INTO budget_settled (rid, owed, api_key_hash, spend_ids, cost_usd)
                            SELECT m.rid, m.rid = ANY(@owed::text[]), NULLIF(m.key, ''),
                                   (SELECT array_agg(i.sid ORDER BY i.sid) FROM input i WHERE i.rid = m.rid), m.cost
                              FROM unnest(@mrids::text[], @mkeys::text[], @mcosts::float8[]) AS m (rid, key, cost)
                             WHERE m.rid IN (SELECT rid FROM input) ORDER BY m.rid
                            ON CONFLICT DO NOTHING RETURNING rid),
                added AS (SELECT sid, SUM(CASE WHEN rid IN (SELECT rid FROM fresh) THEN cost ELSE 0 END) AS cost FROM input GROUP BY sid),
                locked AS (SELECT id FROM budget_spend WHERE id IN (SELECT sid FROM added) ORDER BY id FOR UPDATE)${bsids.length ? `,
                buckets AS (${ADD_BUCKETS})` : ''}
           UPDATE budget_spend b
              SET spent_usd = b.spent_usd + a.cost,
                  reserved_usd = GREATEST(0, b.reserved_usd - COALESCE(f.amount, 0))
             FROM added a LEFT JOIN freed f ON f.spend_id = a.sid
            WHERE b.id = a.sid AND b.id IN (SELECT id FROM locked)`,
          bsids.length ? { rids, sids, costs, owed, mrids, mkeys, mcosts, brids, bsids, bminutes, bcosts } : { rids, sids, costs, owed, mrids, mkeys, mcosts },
        ),
      )
      for (const w of batch) {
        this.unsettled.delete(w.rid)
        this.held.delete(w.rid)
      }
    } catch {
      // kept in `unsettled`: the next tick writes them
    } finally {
      for (const w of batch) this.inFlight.delete(w.rid)
      for (const k of keys) if (k) this.tried(k)
    }
  }

  /**
   * Resolves when every settlement handed over so far is written, retrying those the database
   * refused up to `attempts` times; false when some are still unwritten.
   */
  async settled(attempts: number): Promise<boolean> {
    for (let i = 0; ; i++) {
      while (this.writing.size > 0) await Promise.all([...this.writing])
      if (this.unsettled.size === 0) return true
      if (i >= attempts) return false
      await new Promise((r) => setTimeout(r, 100 * (i + 1)))
      this.retry()
    }
  }

  /** Settlements that could not be written yet (the database is away). */
  get pending(): number {
    return this.unsettled.size
  }
}
