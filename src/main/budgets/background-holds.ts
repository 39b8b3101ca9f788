import type Database from 'better-sqlite3'
import { Ledger } from '../ledger/ledger'
import { type HoldRow, REMOVE_HOLD_SQL, SAVE_HOLD_SQL, type SideWrite } from '../ledger/side-writes'
import type { CallLedger } from '../ledger/types'
import type { CallContext } from '../proxy/gate'
import { QueuedWriter } from './queued-writer'
import type { Reservation } from './state/types'

/**
 * How long a background response's reservation is held at most, from its POST. A deep-research
 * job runs for minutes (up to about half an hour), and OpenAI keeps a background response for
 * polling about 10 minutes after it ends unless it is stored: a result still unread an hour on
 * was most likely read around Burnrate (a webhook, another proxy), and holding its budget longer
 * would refuse calls for spend that may never come. Its cost still counts if it is read later.
 */
export const BACKGROUND_HOLD_MS = 60 * 60_000

/** How often held reservations past their bound are let go when no call comes to do it. */
const EXPIRE_EVERY_MS = 60_000

/** A background response's held reservation, as kept in the data folder's file. */
export type HoldInfo = HoldRow

/**
 * The holds of this machine (`background_holds`, ledger migration 23), written when a hold starts
 * and ends. On SQLite the ledger writes them in the transaction of its next batch, on its write
 * thread when it has one (../ledger/side-writes.ts): never a write of their own on the call's way,
 * which could wait on that thread's lock. With a PostgreSQL ledger this file has no other writer,
 * and the row is written at once; when the file is busy (another connection writing it: `burnrate
 * import`, a backup) it stays queued, in order, and is written again a moment later (as key
 * patterns are: ./queued-writer.ts), and at close. Builds before this one swallowed the error: the
 * hold lived in memory only, and a restart let a second job past the `block` rule it filled.
 */
export class HoldFile {
  private readonly allStmt: Database.Statement
  /** Rows the file could not take yet (PostgreSQL), in order. */
  private readonly writes: QueuedWriter<HoldWrite>

  constructor(
    db: Database.Database,
    private readonly ledger?: CallLedger,
  ) {
    const saveStmt = db.prepare(SAVE_HOLD_SQL)
    const removeStmt = db.prepare(REMOVE_HOLD_SQL)
    this.writes = new QueuedWriter(db.transaction((rows: readonly HoldWrite[]) => {
      for (const w of rows) {
        if ('hold' in w) saveStmt.run(w.hold)
        else removeStmt.run(w.unhold)
      }
    }))
    this.allStmt = db.prepare(
      'SELECT provider, response_id AS responseId, api_key_hash AS keyHash, rule, session, ts, amount, until FROM background_holds',
    )
  }

  save(h: HoldInfo): void {
    this.keep({ hold: h })
  }

  remove(provider: string, responseId: string): void {
    this.keep({ unhold: { provider, responseId } })
  }

  /** Writes the rows still queued (PostgreSQL); those the file cannot take now are tried again in a moment. */
  flush(): void {
    this.writes.flush()
  }

  /** Hands over the rows the file has not taken (PostgreSQL; at a stop: ./unwritten-rows.ts), and forgets them. */
  takePending(): SideWrite[] {
    return this.writes.take()
  }

  /** Stops writing on its own (the server's close, after its last `flush`). */
  close(): void {
    this.writes.close()
  }

  private keep(w: HoldWrite): void {
    if (this.ledger instanceof Ledger) {
      this.ledger.keepWithNextBatch([w])
      return
    }
    this.writes.add([w])
    // After rows still queued: a hold let go is never written before its save.
    if (this.writes.queued.length === 1) this.writes.flush()
  }

  /**
   * The holds kept (read at start-up, before any is kept): those on disk, as the rows the ledger
   * has not written yet change them (a spill file's the database could not take at start-up,
   * ../ledger/restored.ts): a hold kept there holds, one let go there does not.
   */
  all(): HoldInfo[] {
    const held = new Map<string, HoldInfo>()
    for (const h of this.allStmt.all() as HoldInfo[]) held.set(keyOf(h.provider, h.responseId), h)
    for (const w of this.ledger instanceof Ledger ? this.ledger.unwritten().side : this.writes.queued) {
      if ('hold' in w) held.set(keyOf(w.hold.provider, w.hold.responseId), w.hold)
      else if ('unhold' in w) held.delete(keyOf(w.unhold.provider, w.unhold.responseId))
    }
    return [...held.values()]
  }
}

/**
 * Background responses whose POST ended with the job queued: each keeps the reservation its call
 * was admitted with (its expected cost) until its real usage is in (a cost move of its call, here
 * or from another instance), its result says it ended, or BACKGROUND_HOLD_MS has passed. So a
 * `block` rule counts the jobs still running as it counts calls in flight (README: overshoot).
 */
export class BackgroundHolds {
  private readonly held = new Map<string, Held>()
  private timer: NodeJS.Timeout | null = null
  /** Where holds are kept across a restart (null: in memory only). */
  file: HoldFile | null = null
  /**
   * Holds kept before this start not held again yet (`waitFor`): at start-up, and while the
   * budget state cannot hold them (PostgreSQL away), when they are tried again a moment later.
   * Let go meanwhile (their result read, their usage taken), they are not held again.
   */
  private readonly waiting = new Map<string, HoldInfo>()
  /** Holds the budget state could not hold again when asked (PostgreSQL away), tried again since (tests). */
  retried = 0

  get size(): number {
    return this.held.size
  }

  /** A hold kept before this start, to be held again (`keep`) unless it is let go first. */
  waitFor(info: HoldInfo): void {
    this.waiting.set(keyOf(info.provider, info.responseId), info)
  }

  /** Whether a hold kept before this start is still to be held again (not let go, nor held, meanwhile). */
  isWaiting(info: HoldInfo): boolean {
    return this.waiting.get(keyOf(info.provider, info.responseId)) === info
  }

  /** Stops waiting for the holds kept before this start (the server stops: the file keeps them for the next). */
  stopWaiting(): void {
    this.waiting.clear()
  }

  /** Holds a reservation (`free` lets it go) for `info` (created by the call `ctx`, unknown after a restart), and keeps it in the file. */
  keep(info: HoldInfo, free: () => void, ctx?: CallContext): void {
    const k = keyOf(info.provider, info.responseId)
    this.waiting.delete(k)
    // The same response held twice (a retried POST answered with the same id): one hold.
    this.held.get(k)?.free()
    this.held.set(k, { info, free, ctx })
    this.write(() => this.file?.save(info))
    if (!this.timer) {
      this.timer = setInterval(() => this.expire(Date.now()), EXPIRE_EVERY_MS)
      this.timer.unref()
    }
  }

  /**
   * A background job whose result is not in yet, its creating call recorded at `estimate` (the
   * ledger counts that as spend from now on, and a re-price moves it): its reservation `r` is
   * settled at the estimate, as any call's is at its cost, and what the job may cost beyond it is
   * held (`hold`: the budget state's) until its result is in (README: overshoot). Builds before
   * this one kept the whole reservation held beside the estimate, counting the prompt twice while
   * the job ran. Without an estimate (unpriced: an xAI video) the reservation itself is held; on
   * PostgreSQL it is held until the smaller hold is, and settled at the estimate when it ends.
   * Returns what the call's record carries (`Reservation.settles`).
   */
  holdJob(
    info: HoldInfo, r: Reservation, estimate: number, hold: ((usd: number) => Reservation | Promise<Reservation>) | undefined, ctx?: CallContext,
  ): string | undefined {
    if (!(estimate > 0) || !hold) {
      // Nothing counted yet: the reservation stays until the result (its release frees, adds 0).
      this.keep(info, () => r.release(), ctx)
      return undefined
    }
    const rest = { ...info, amount: Math.max(0, info.amount - estimate) }
    let held: Reservation | Promise<Reservation>
    try {
      held = hold(rest.amount)
    } catch (err) {
      held = Promise.reject(err)
    }
    if (!(held instanceof Promise)) {
      r.settle(estimate)
      this.keep(rest, held.release, ctx)
      return r.settles
    }
    // Until the smaller hold is in, the whole reservation holds (its end settles it at the
    // estimate: the call is stored as settled by it). Replacing it here ends it.
    let ended = false
    this.keep(info, () => {
      ended = true
      r.settle(estimate)
    }, ctx)
    held.then(
      (h) => {
        if (ended) h.release()
        else this.keep(rest, h.release, ctx)
      },
      () => {
        // Not held (the database away): the whole reservation stays held until the job ends.
      },
    )
    return r.settles
  }

  /** The response's result is in (or says it ended): its reservation is let go. */
  release(provider: string, responseId: string): void {
    const k = keyOf(provider, responseId)
    this.waiting.delete(k)
    const h = this.held.get(k)
    if (h) this.end(k, h)
    else this.write(() => this.file?.remove(provider, responseId))
  }

  /** The call that created a response still held here (null: not held, or held again after a restart). */
  contextOf(provider: string, responseId: string): CallContext | null {
    return this.held.get(keyOf(provider, responseId))?.ctx ?? null
  }

  /** The real usage of the call created at `ts` with `keyHash` taken (its cost move, on any instance): its hold ends. */
  releaseCall(keyHash: string, ts: number, provider: string): void {
    for (const [k, w] of this.waiting) {
      if (w.keyHash === keyHash && w.ts === ts && w.provider === provider) {
        this.waiting.delete(k)
        this.write(() => this.file?.remove(w.provider, w.responseId))
      }
    }
    if (this.held.size === 0) return
    for (const [k, h] of this.held) {
      if (h.info.keyHash === keyHash && h.info.ts === ts && h.info.provider === provider) this.end(k, h)
    }
  }

  /** Lets go of the holds past their bound. */
  expire(now: number): void {
    for (const [k, h] of this.held) if (h.info.until <= now) this.end(k, h)
  }

  /** Every hold in the file (a restart holds them again, or forgets those past their bound). */
  kept(): HoldInfo[] {
    try {
      return this.file?.all() ?? []
    } catch {
      return []
    }
  }

  /** Forgets a kept hold that will not be held again (past its bound, its rule gone). */
  forget(info: HoldInfo): void {
    this.waiting.delete(keyOf(info.provider, info.responseId))
    this.write(() => this.file?.remove(info.provider, info.responseId))
  }

  private end(k: string, h: Held): void {
    this.held.delete(k)
    h.free()
    this.write(() => this.file?.remove(h.info.provider, h.info.responseId))
    if (this.held.size === 0 && this.timer) {
      clearInterval(this.timer)
      this.timer = null
    }
  }

  private write(fn: () => void): void {
    try {
      fn()
    } catch {
      // the file cannot be written (closed at shutdown): the hold lives in memory only
    }
  }
}

interface Held {
  info: HoldInfo
  free: () => void
  /** The creating call (what its real usage is learnt for, ./expected.ts); in memory only. */
  ctx?: CallContext
}

type HoldWrite = Extract<SideWrite, { hold: unknown } | { unhold: unknown }>

function keyOf(provider: string, responseId: string): string {
  return `${provider}\u0000${responseId}`
}
