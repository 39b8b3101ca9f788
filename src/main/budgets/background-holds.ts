import type Database from 'better-sqlite3'
import type { CallContext } from '../proxy/gate'

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
export interface HoldInfo {
  /** Burnrate's provider name and the response's id (`resp_…`): what a later answer about it names. */
  provider: string
  responseId: string
  /** The creating call's key (by hash), arrival time and session: what its cost moves are named by. */
  keyHash: string
  ts: number
  session: string
  /** The identity of the rule it was reserved under (scope.ts `ruleIdentity`). */
  rule: string
  /** What was reserved (USD): the call's expected cost, as at admission. */
  amount: number
  /** When the hold ends even if the result is never read (ms). */
  until: number
}

/** The holds of this machine (`background_holds`, ledger migration 23): written when a hold starts and ends, never on a call's path otherwise. */
export class HoldFile {
  private readonly saveStmt: Database.Statement
  private readonly removeStmt: Database.Statement
  private readonly allStmt: Database.Statement

  constructor(db: Database.Database) {
    this.saveStmt = db.prepare(
      `INSERT OR REPLACE INTO background_holds (provider, response_id, api_key_hash, rule, session, ts, amount, until)
       VALUES (@provider, @responseId, @keyHash, @rule, @session, @ts, @amount, @until)`,
    )
    this.removeStmt = db.prepare('DELETE FROM background_holds WHERE provider = ? AND response_id = ?')
    this.allStmt = db.prepare(
      'SELECT provider, response_id AS responseId, api_key_hash AS keyHash, rule, session, ts, amount, until FROM background_holds',
    )
  }

  save(h: HoldInfo): void {
    this.saveStmt.run(h)
  }

  remove(provider: string, responseId: string): void {
    this.removeStmt.run(provider, responseId)
  }

  all(): HoldInfo[] {
    return this.allStmt.all() as HoldInfo[]
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

  get size(): number {
    return this.held.size
  }

  /** Holds a reservation (`free` lets it go) for `info` (created by the call `ctx`, unknown after a restart), and keeps it in the file. */
  keep(info: HoldInfo, free: () => void, ctx?: CallContext): void {
    const k = keyOf(info.provider, info.responseId)
    // The same response held twice (a retried POST answered with the same id): one hold.
    this.held.get(k)?.free()
    this.held.set(k, { info, free, ctx })
    this.write(() => this.file?.save(info))
    if (!this.timer) {
      this.timer = setInterval(() => this.expire(Date.now()), EXPIRE_EVERY_MS)
      this.timer.unref()
    }
  }

  /** The response's result is in (or says it ended): its reservation is let go. */
  release(provider: string, responseId: string): void {
    const k = keyOf(provider, responseId)
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

function keyOf(provider: string, responseId: string): string {
  return `${provider}\u0000${responseId}`
}
