import type pg from 'pg'
import type { Logger } from '../../log'
import type { PostgresStore } from '../../storage/postgres'
import type { CostAdjustment, KeyLatest } from '../types'
import { type AdmissionRow, CALLS_CHANNEL, type FeedRow, type MoveRow, notifyNow } from './publish'
import { type Snapshot, visibleIn } from './snapshot'

/**
 * The listening side of the calls feed (what is sent, and why it is counted once: ./publish.ts):
 * one connection per instance, re-reads in a snapshot, notifications held while one runs.
 */
export interface FeedTarget {
  /** Other instances' calls, to count in the meters. */
  rows(rows: readonly FeedRow[]): void
  /**
   * Other instances' calls a read of the meters already counted: what its rows cannot say (the
   * patterns the sender saw each key match, the model a requested name was answered as) is
   * learnt from them all the same; nothing is counted.
   */
  known(rows: readonly FeedRow[]): void
  /** Other instances' moves of stored calls' costs, to move the meters by. */
  moves(moves: readonly CostAdjustment[]): void
  /** Other instances' admissions under per-minute request limits, as they happen (./admissions.ts). */
  admissions(rows: readonly AdmissionRow[]): void
  /** Read the meters again (notifications may have been missed, or costs moved): resolves with the reload's snapshot, null when it failed. */
  reload(): Promise<Snapshot | null>
}

const RETRY_MS = [250, 1000, 2000, 5000]

/**
 * How often the listening connection checks that it still hears (a NOTIFY of its own, sent on
 * another connection), and how long it waits for it. A connection can stay open and hear nothing:
 * a pooler in transaction mode (PgBouncer's) runs the LISTEN on a server connection it then lends
 * to others, and a socket a NAT or firewall silently dropped errors only at the next write.
 */
export interface ProbeTiming {
  everyMs: number
  waitMs: number
}
export const PROBE: ProbeTiming = { everyMs: 30_000, waitMs: 10_000 }

/**
 * Listens on CALLS_CHANNEL on a connection of its own (checked out of the pool for good, given
 * back and taken again after an error) and hands other instances' calls to `target`: only calls
 * the last reload did not read, and none while a reload is under way (they wait for it).
 */
export class SharedCallFeed {
  private client: pg.PoolClient | null = null
  private snapshot: Snapshot | null = null
  /** The read of the meters under way, if one is. */
  private pendingReload: Promise<void> | null = null
  private reloadAgain = false
  /**
   * Times the connection began listening, and how many of them the last successful read began
   * after: a read under that count has not covered the calls stored while it did not listen.
   */
  private listens = 0
  private readAfter = 0
  private held: Heard[] = []
  private closed = false
  private attempt = 0
  /** Each waits on its own: a read waiting to be tried again must not hold back a reconnection. */
  private reconnectTimer: NodeJS.Timeout | null = null
  private rereadTimer: NodeJS.Timeout | null = null
  private probeTimer: NodeJS.Timeout | null = null
  /** The last check sent, and the last one heard back. */
  private probeSent = 0
  private probeHeard = 0
  /** Checks missed in a row (the warning is logged at the first). */
  private deafStreak = 0
  /** Notifications counted, and reloads done (health and tests). */
  readonly stats = { counted: 0, skipped: 0, reloads: 0, connects: 0, missedProbes: 0, admissions: 0 }

  constructor(
    private readonly store: PostgresStore,
    private readonly feedId: string,
    private readonly target: FeedTarget,
    private readonly log?: Logger,
    private readonly probe: ProbeTiming = PROBE,
  ) {}

  /** Listens, then reads the meters (the reload covers whatever was stored before the listening began). */
  start(): void {
    void this.connect()
  }

  /** Reads the meters again; notifications that come meanwhile wait for it. Several asked at once run as one more. */
  reload(): Promise<void> {
    if (this.pendingReload) {
      this.reloadAgain = true
      return this.pendingReload
    }
    this.pendingReload = (async () => {
      try {
        do {
          this.reloadAgain = false
          const listens = this.listens
          const s = await this.target.reload()
          if (s) {
            this.snapshot = s
            this.readAfter = listens
            this.stats.reloads++
          }
        } while (this.reloadAgain && !this.closed)
      } finally {
        this.pendingReload = null
        const held = this.held
        this.held = []
        for (const h of held) this.count(h)
        // Never read (PostgreSQL away), or not since it listens again: read again in a moment, or
        // the meters would miss what was stored meanwhile (its notifications were not heard).
        if ((!this.snapshot || this.readAfter < this.listens) && !this.closed) this.retryReload()
      }
    })()
    return this.pendingReload
  }

  /** `calls_feed` in `/api/health`: whether it listens, and what it has counted, skipped (already read) and read again. */
  status(): { listening: boolean; heard: number; skipped: number; reads: number; admissions: number; missed_checks: number } {
    return {
      listening: this.client !== null, heard: this.stats.counted, skipped: this.stats.skipped, reads: this.stats.reloads,
      admissions: this.stats.admissions, missed_checks: this.stats.missedProbes,
    }
  }

  async close(): Promise<void> {
    this.closed = true
    for (const t of [this.reconnectTimer, this.rereadTimer, this.probeTimer]) if (t) clearTimeout(t)
    const c = this.client
    this.client = null
    if (c) {
      // The connection is closed, not pooled: that ends its LISTEN without a query (which would
      // wait for a database that may be away at shutdown).
      c.removeAllListeners('notification')
      c.release(true)
    }
  }

  private async connect(): Promise<void> {
    if (this.closed) return
    let client: pg.PoolClient | null = null
    try {
      client = await this.store.pool.connect()
      if (this.closed) {
        client.release(true)
        return
      }
      client.on('notification', (m) => this.heard(m))
      client.on('error', () => this.lost(client!))
      await client.query(`LISTEN ${CALLS_CHANNEL}`)
      if (this.closed) {
        client.release(true)
        return
      }
      this.client = client
      this.listens++
      this.attempt = 0
      this.stats.connects++
      if (this.stats.connects > 1 && this.deafStreak === 0) this.log?.info('budgets: listening for other instances’ calls again; their meters are read again')
      this.scheduleProbe(client)
    } catch {
      if (client) client.release(true)
      this.retry()
      return
    }
    // Whatever was stored before the listening began is in what the reload reads.
    await this.reload()
  }

  private lost(client: pg.PoolClient, warn = true): void {
    if (this.client !== client) return
    this.client = null
    if (this.probeTimer) clearTimeout(this.probeTimer)
    this.probeTimer = null
    client.removeAllListeners('notification')
    client.release(true)
    if (!this.closed) {
      if (warn) this.log?.warn('budgets: lost the connection that hears other instances’ calls; reconnecting')
      this.retry()
    }
  }

  /** In `everyMs`, a check of `client`: a NOTIFY of this feed's own, sent on another connection, that it must hear within `waitMs`. */
  private scheduleProbe(client: pg.PoolClient): void {
    if (this.probeTimer) clearTimeout(this.probeTimer)
    const current = () => this.client === client && !this.closed
    this.probeTimer = later(this.probe.everyMs, () => {
      this.probeTimer = null
      if (!current()) return
      const n = ++this.probeSent
      notifyNow(this.store, [JSON.stringify({ i: this.feedId, probe: n })]).then(
        () => {
          // Replaced meanwhile: the new connection has checks of its own.
          if (!current()) return
          this.probeTimer = later(this.probe.waitMs, () => {
            this.probeTimer = null
            if (!current()) return
            if (this.probeHeard >= n) return this.scheduleProbe(client)
            this.deaf(client)
          })
        },
        // PostgreSQL away: the listening connection's own error reconnects it; checked again meanwhile.
        () => {
          if (current()) this.scheduleProbe(client)
        },
      )
    })
  }

  /** The listening connection did not hear its own check: notifications may be lost. A new one, and the meters read again. */
  private deaf(client: pg.PoolClient): void {
    this.stats.missedProbes++
    if (this.deafStreak++ === 0) {
      this.log?.warn(
        `budgets: the connection that hears other instances’ calls did not hear its own check within ${Math.round(this.probe.waitMs / 1000)} s; ` +
          'reconnecting and reading the meters again (and so every ' + Math.round(this.probe.everyMs / 1000) + ' s while it lasts). ' +
          'LISTEN needs a session of its own: a pooler in transaction mode (PgBouncer’s) loses notifications; point storage.url at the database or at a session-mode pool',
      )
    }
    this.lost(client, false)
  }

  private retry(): void {
    if (this.closed || this.reconnectTimer) return
    this.reconnectTimer = later(RETRY_MS[Math.min(this.attempt++, RETRY_MS.length - 1)], () => {
      this.reconnectTimer = null
      void this.connect()
    })
  }

  private retryReload(): void {
    if (this.rereadTimer) return
    this.rereadTimer = later(RETRY_MS[RETRY_MS.length - 1], () => {
      this.rereadTimer = null
      void this.reload()
    })
  }

  private heard(m: pg.Notification): void {
    if (m.channel !== CALLS_CHANNEL || !m.payload) return
    const space = m.payload.indexOf(' ')
    const xid = Number(m.payload.slice(0, space))
    let body: { i?: string; r?: FeedRow[]; m?: MoveRow[]; a?: AdmissionRow[]; reload?: boolean; probe?: number }
    try {
      body = JSON.parse(m.payload.slice(space + 1))
    } catch {
      return
    }
    if (body.i === this.feedId) {
      // Its own calls reach its meters directly; its own check says it still hears.
      if (typeof body.probe === 'number') this.heardProbe(body.probe)
      return
    }
    if (body.reload) {
      void this.reload()
      return
    }
    if (Array.isArray(body.a)) {
      // Counted as they come, reload or not: no read of the meters holds admissions (they are not stored yet).
      this.stats.admissions++
      try {
        this.target.admissions(body.a)
      } catch {
        // counting is the meters' own affair; the feed goes on
      }
      return
    }
    if (!Number.isFinite(xid)) return
    const heard: Heard | null = Array.isArray(body.r) ? { xid, rows: body.r } : Array.isArray(body.m) ? { xid, moves: body.m } : null
    if (!heard) return
    if (this.pendingReload || !this.snapshot) {
      this.held.push(heard)
      return
    }
    this.count(heard)
  }

  private heardProbe(n: number): void {
    this.probeHeard = Math.max(this.probeHeard, n)
    if (this.deafStreak > 0) {
      this.deafStreak = 0
      this.log?.info('budgets: the connection that hears other instances’ calls hears again')
    }
  }

  private count(h: Heard): void {
    if (!this.snapshot || visibleIn(h.xid, this.snapshot)) {
      // In what the last read found, or no read has found anything yet (PostgreSQL was away): the one to come reads them.
      this.stats.skipped++
      try {
        if (h.rows) this.target.known(h.rows)
      } catch {
        // learning is the meters' own affair; the feed goes on
      }
      return
    }
    this.stats.counted++
    try {
      if (h.rows) this.target.rows(h.rows)
      else if (h.moves) this.target.moves(h.moves.map(moveOf))
    } catch {
      // counting is the meters' own affair; the feed goes on
    }
  }
}

function later(ms: number, fn: () => void): NodeJS.Timeout {
  const t = setTimeout(fn, ms)
  t.unref()
  return t
}

/** A notification heard: calls stored, or stored calls' costs moved, in transaction `xid`. */
interface Heard {
  xid: number
  rows?: readonly FeedRow[]
  moves?: readonly MoveRow[]
}

function moveOf([api_key_hash, ts, provider, model, requested_model, agent, tenant, session, delta, usageIn, requests, latest]: MoveRow): CostAdjustment {
  const usage = typeof usageIn === 'string' ? { usage_in: true, response_id: usageIn } : usageIn === 1 ? { usage_in: true } : {}
  const counted = typeof requests === 'number' && requests !== 0 ? { requests, ...latestOf(latest) } : {}
  return { api_key_hash, ts, provider, model, requested_model, agent, tenant, session, delta, ...usage, ...counted }
}

/** A move's key's newest call left, as sent (none: 0; not sent, or not understood: not known). */
function latestOf(latest: unknown): { latest?: KeyLatest | null } {
  if (latest === 0) return { latest: null }
  if (Array.isArray(latest) && typeof latest[0] === 'number' && Number.isFinite(latest[0]) && typeof latest[1] === 'string') return { latest: { ts: latest[0], tenant: latest[1] } }
  return {}
}
